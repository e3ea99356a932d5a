// Package speechsvc connects the speech package to the stored settings: it
// loads and saves the speech settings (the provider key encrypted, verified
// by a real test call before anything is stored) and hands the HTTP layer a
// speech.Service built from the current settings. Every replica re-reads
// the settings revision at most every CacheTTL, so a change saved on one
// replica is in force on all of them within that time without a bus
// message. docs/speech.md describes the settings.
package speechsvc

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/speech"
	"github.com/lcmproject/lcm/internal/store"
)

// CacheTTL bounds how long a replica uses its cached settings before it
// checks the stored revision again: short enough that a change reaches all
// replicas almost at once, long enough that a burst of requests costs one
// small read.
const CacheTTL = 2 * time.Second

// Input limits of the settings.
const (
	maxPhrases    = 500 // a command vocabulary, not a corpus
	maxPhraseLen  = 200
	maxModelLen   = 256
	maxBaseURLLen = 512
	maxKeyLen     = 4096
	maxLangLen    = 35 // the longest BCP 47 tag RFC 5646 recommends supporting
)

// Settings is what GET /api/v1/settings/speech shows: never the key.
type Settings struct {
	Provider    string
	APIKeySet   bool
	KeyVerified bool
	BaseURL     string
	Model       string
	STTLanguage string
	TTSLanguage string
	Phrases     []string
	// Saved is false while the defaults of a fresh install are in force.
	Saved bool
	// LocalAvailable tells whether the local provider's tools are installed.
	LocalAvailable bool
	UpdatedAt      time.Time
}

// Update is the body of PUT /api/v1/settings/speech. APIKey nil keeps the
// stored key (when the provider is unchanged); "" removes it.
type Update struct {
	Provider    string
	APIKey      *string
	BaseURL     string
	Model       string
	STTLanguage string
	TTSLanguage string
	Phrases     []string
}

// Service serves the speech endpoints and the speech settings.
type Service struct {
	st             *store.Store
	ttsDefault     string
	opts           []speech.Option
	localAvailable func() error
	now            func() time.Time

	mu      sync.Mutex // guards the cache below
	cur     *speech.Service
	curRev  int64
	checked time.Time
}

// New returns the service. ttsLanguage is the configured default voice
// language (config speech.tts_language); opts go to every speech.Service
// it builds (tests point google/openai at local servers).
func New(st *store.Store, ttsLanguage string, opts ...speech.Option) *Service {
	return &Service{st: st, ttsDefault: strings.TrimSpace(ttsLanguage), opts: opts,
		localAvailable: func() error { return speech.LocalAvailable("") }, now: time.Now}
}

// Current returns the speech.Service for the settings in force.
func (s *Service) Current(ctx context.Context) (*speech.Service, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.cur != nil && now.Sub(s.checked) < CacheTTL {
		return s.cur, nil
	}
	rev, err := s.st.SpeechSettingsRevision(ctx)
	if err != nil {
		return nil, err
	}
	if s.cur != nil && rev == s.curRev {
		s.checked = now
		return s.cur, nil
	}
	set, _, rev, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	svc, err := speech.NewService(set, s.opts...)
	if err != nil {
		return nil, err
	}
	s.cur, s.curRev, s.checked = svc, rev, now
	return svc, nil
}

// Transcribe transcribes decoded audio with the current settings.
func (s *Service) Transcribe(ctx context.Context, a speech.Audio) (string, error) {
	svc, err := s.Current(ctx)
	if err != nil {
		return "", err
	}
	return svc.TranscribeAudio(ctx, a)
}

// Voices lists voices for language; "" uses the configured TTS language.
func (s *Service) Voices(ctx context.Context, language string) ([]speech.Voice, error) {
	svc, err := s.Current(ctx)
	if err != nil {
		return nil, err
	}
	return svc.Voices(ctx, language)
}

// Get returns the settings in force, without the key.
func (s *Service) Get(ctx context.Context) (Settings, error) {
	set, saved, _, err := s.load(ctx)
	if err != nil {
		return Settings{}, err
	}
	out := view(set)
	out.Saved = saved.Revision > 0
	out.UpdatedAt = saved.UpdatedAt
	out.LocalAvailable = s.localAvailable() == nil
	return out, nil
}

// Save validates the update, makes the provider's real test call and
// stores the settings only if it succeeds (the key then counts as
// verified). A failed test call stores nothing and returns the provider's
// error.
func (s *Service) Save(ctx context.Context, u Update) (Settings, error) {
	cur, _, _, err := s.load(ctx)
	if err != nil {
		return Settings{}, err
	}
	set, err := s.merge(cur, u)
	if err != nil {
		return Settings{}, err
	}
	if set.Provider != speech.ProviderOff {
		svc, err := speech.NewService(set, s.opts...)
		if err != nil {
			return Settings{}, err
		}
		if err := svc.Verify(ctx); err != nil {
			return Settings{}, err
		}
		set.KeyVerified = true
	}
	if _, err := s.st.PutSpeechSettings(ctx, store.SpeechSettings{Provider: set.Provider, APIKey: set.APIKey,
		KeyVerified: set.KeyVerified, BaseURL: set.BaseURL, Model: set.Model, STTLanguage: set.STTLanguage,
		TTSLanguage: set.TTSLanguage, Phrases: set.Phrases}); err != nil {
		return Settings{}, err
	}
	s.mu.Lock()
	s.cur = nil // rebuild on the next request
	s.mu.Unlock()
	return s.Get(ctx)
}

// load returns the effective settings: the stored ones, or on a fresh
// install local when its tools are installed and off otherwise. An empty
// TTS language falls back to the configured one.
func (s *Service) load(ctx context.Context) (speech.Settings, store.SpeechSettings, int64, error) {
	st, ok, err := s.st.GetSpeechSettings(ctx)
	if err != nil {
		return speech.Settings{}, store.SpeechSettings{}, 0, err
	}
	set := speech.Settings{Provider: st.Provider, APIKey: st.APIKey, KeyVerified: st.KeyVerified, BaseURL: st.BaseURL,
		Model: st.Model, STTLanguage: st.STTLanguage, TTSLanguage: st.TTSLanguage, Phrases: st.Phrases}
	if !ok && s.localAvailable() == nil {
		set.Provider = speech.ProviderLocal
	}
	if set.TTSLanguage == "" {
		set.TTSLanguage = s.ttsDefault
	}
	return set, st, st.Revision, nil
}

// merge applies an update to the current settings after validating it.
func (s *Service) merge(cur speech.Settings, u Update) (speech.Settings, error) {
	set := speech.Settings{Provider: strings.TrimSpace(u.Provider), BaseURL: strings.TrimSpace(u.BaseURL),
		Model: strings.TrimSpace(u.Model), STTLanguage: strings.TrimSpace(u.STTLanguage),
		TTSLanguage: strings.TrimSpace(u.TTSLanguage)}
	switch set.Provider {
	case speech.ProviderOff, speech.ProviderLocal, speech.ProviderGoogle, speech.ProviderOpenAI:
	default:
		return set, invalid("provider must be one of local, google, openai or empty (off)")
	}
	switch {
	case u.APIKey != nil:
		set.APIKey = strings.TrimSpace(*u.APIKey)
	case cur.Provider == set.Provider:
		set.APIKey = cur.APIKey // unchanged provider keeps its key
	}
	if len(set.APIKey) > maxKeyLen || strings.ContainsFunc(set.APIKey, isSpaceOrControl) {
		return set, invalid("apiKey must be at most 4096 characters without spaces or control characters")
	}
	if len(set.BaseURL) > maxBaseURLLen {
		return set, invalid("baseUrl must be at most 512 characters")
	}
	if utf8.RuneCountInString(set.Model) > maxModelLen || strings.ContainsFunc(set.Model, isControl) {
		return set, invalid("model must be at most 256 characters without control characters")
	}
	for name, v := range map[string]string{"sttLanguage": set.STTLanguage, "ttsLanguage": set.TTSLanguage} {
		if !validLanguage(v) {
			return set, invalid(name + " must be a language code such as en-US")
		}
	}
	if len(u.Phrases) > maxPhrases {
		return set, invalid("phrases holds at most 500 entries")
	}
	for _, p := range u.Phrases {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if utf8.RuneCountInString(p) > maxPhraseLen || strings.ContainsFunc(p, isControl) {
			return set, invalid("each phrase must be one line of at most 200 characters")
		}
		set.Phrases = append(set.Phrases, p)
	}
	if set.Provider == speech.ProviderGoogle || set.Provider == speech.ProviderOpenAI {
		if set.APIKey == "" {
			return set, invalid("the " + set.Provider + " provider needs an apiKey")
		}
	}
	return set, nil
}

func view(set speech.Settings) Settings {
	return Settings{Provider: set.Provider, APIKeySet: set.APIKey != "", KeyVerified: set.KeyVerified,
		BaseURL: set.BaseURL, Model: set.Model, STTLanguage: set.STTLanguage, TTSLanguage: set.TTSLanguage,
		Phrases: append([]string{}, set.Phrases...)}
}

// validLanguage accepts "" and BCP 47-shaped tags: alphanumeric subtags of
// 1–8 characters separated by hyphens (or underscores, which providers
// tolerate).
func validLanguage(tag string) bool {
	if tag == "" {
		return true
	}
	if len(tag) > maxLangLen {
		return false
	}
	for _, sub := range strings.FieldsFunc(tag, func(r rune) bool { return r == '-' || r == '_' }) {
		if len(sub) > 8 {
			return false
		}
		for _, r := range sub {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return !strings.HasPrefix(tag, "-") && !strings.HasSuffix(tag, "-") && !strings.Contains(tag, "--")
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func isSpaceOrControl(r rune) bool { return r <= 0x20 || r == 0x7f }

func invalid(msg string) error {
	return domain.Invalid(speech.CodeInvalidSettings, msg)
}
