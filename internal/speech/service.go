package speech

import (
	"context"
	"errors"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// Service is what the HTTP layer calls: it validates input, applies the
// key-verification rules and returns only *domain.Error values. Build a new
// Service when the settings change; a Service is safe for concurrent use.
type Service struct {
	settings Settings
	provider Provider // nil when speech is off
	maxAudio int64
}

// NewService builds the Service for the settings. Speech off is not an
// error here (its calls answer speech_not_configured); an unknown provider
// or unusable settings are (invalid_speech_settings).
func NewService(s Settings, opts ...Option) (*Service, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	svc := &Service{settings: s, maxAudio: o.maxAudioBytes}
	if s.Provider == ProviderOff {
		return svc, nil
	}
	p, err := newProvider(s, o)
	var de *domain.Error
	if err != nil && errors.As(err, &de) && de.Code == CodeNotConfigured {
		return svc, nil // e.g. no key yet: calls report speech_not_configured
	}
	if err != nil {
		return nil, err
	}
	svc.provider = p
	return svc, nil
}

// Transcribe decodes base64 audio (standard or URL-safe, padded or not) of
// the given media type and transcribes it.
func (s *Service) Transcribe(ctx context.Context, b64, mimeType string) (string, error) {
	if _, err := parseMIME(mimeType); err != nil {
		return "", err
	}
	if strings.TrimSpace(b64) == "" {
		return "", domain.Invalid(CodeInvalidAudio, "audio is required")
	}
	data, err := decodeBase64(strings.NewReader(b64), s.maxAudio)
	if err != nil {
		return "", err
	}
	return s.TranscribeAudio(ctx, Audio{Data: data, MimeType: mimeType})
}

// TranscribeAudio transcribes already decoded audio, e.g. from
// DecodeSTTRequest.
func (s *Service) TranscribeAudio(ctx context.Context, a Audio) (string, error) {
	if err := s.ready(false); err != nil {
		return "", err
	}
	if _, err := parseMIME(a.MimeType); err != nil {
		return "", err
	}
	if len(a.Data) == 0 {
		return "", domain.Invalid(CodeInvalidAudio, "audio is empty")
	}
	if int64(len(a.Data)) > s.maxAudio {
		return "", tooLarge(s.maxAudio)
	}
	text, err := s.provider.Transcribe(ctx, a)
	if err != nil {
		return "", asDomain(err)
	}
	return text, nil
}

// Voices lists voices for a language code; "" uses the configured TTS
// language. google and openai require a verified key (key_not_verified).
func (s *Service) Voices(ctx context.Context, language string) ([]Voice, error) {
	if err := s.ready(true); err != nil {
		return nil, err
	}
	vs, err := s.provider.Voices(ctx, strings.TrimSpace(language))
	if err != nil {
		return nil, asDomain(err)
	}
	return vs, nil
}

// Verify makes the provider's test call regardless of KeyVerified; the
// settings service calls it before storing KeyVerified = true.
func (s *Service) Verify(ctx context.Context) error {
	if s.provider == nil {
		return s.ready(false)
	}
	return asDomain(s.provider.Verify(ctx))
}

// ready reports whether the service may serve a call.
func (s *Service) ready(voices bool) error {
	if s.settings.Provider == ProviderOff {
		return notConfigured("speech is not set up")
	}
	remote := s.settings.Provider == ProviderGoogle || s.settings.Provider == ProviderOpenAI
	if remote && (s.settings.APIKey == "" || !s.settings.KeyVerified) {
		if voices {
			return &domain.Error{Kind: domain.ErrUnavailable, Code: CodeKeyNotVerified,
				Message: "speech is not set up: the " + s.settings.Provider + " key has not been verified"}
		}
		return notConfigured("speech is not set up: the " + s.settings.Provider + " key has not been verified")
	}
	if s.provider == nil {
		return notConfigured("speech is not set up")
	}
	return nil
}

// asDomain keeps *domain.Error values and hides anything else behind a
// generic provider_error, so nothing internal reaches a client.
func asDomain(err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return de
	}
	return domain.Unavailable(CodeProviderError, "speech provider failed")
}
