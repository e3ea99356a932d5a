package speech

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// Provider names accepted in Settings.Provider. The empty string switches
// speech off.
const (
	ProviderOff    = ""
	ProviderLocal  = "local"
	ProviderGoogle = "google"
	ProviderOpenAI = "openai"
)

// Error codes carried in domain.Error.Code by every error of this package.
const (
	// CodeNotConfigured: speech is off, or the chosen provider lacks its
	// tools, model or verified key (speech-to-text).
	CodeNotConfigured = "speech_not_configured"
	// CodeInvalidAudio: the audio is missing, empty or not valid base64.
	CodeInvalidAudio = "invalid_audio"
	// CodeInvalidRequest: the speech-to-text JSON body is malformed.
	CodeInvalidRequest = "invalid_request"
	// CodeUnsupportedMIME: mime_type is missing or not an allowed audio type.
	CodeUnsupportedMIME = "unsupported_mime_type"
	// CodeUndecodable: ffmpeg cannot decode the audio.
	CodeUndecodable = "undecodable_audio"
	// CodeTooLarge: the decoded audio exceeds the size or duration limit.
	CodeTooLarge = "audio_too_large"
	// CodeProviderError: the provider answered with an error; the message
	// holds its sanitized text.
	CodeProviderError = "provider_error"
	// CodeProviderUnavailable: the provider cannot be reached (connection
	// refused, DNS, timeout) or a local tool timed out.
	CodeProviderUnavailable = "provider_unavailable"
	// CodeKeyNotVerified: voices were requested while the google/openai key
	// has not passed verification.
	CodeKeyNotVerified = "key_not_verified"
	// CodeInvalidSettings: New was given settings it cannot use.
	CodeInvalidSettings = "invalid_speech_settings"
)

// Limits and defaults.
const (
	// MaxRequestBytes is the body limit of POST /v1/speech/stt (spec: 25 MiB).
	MaxRequestBytes = 25 << 20
	// MaxAudioBytes bounds the decoded audio. A 25 MiB body holds at most
	// 18.75 MiB of base64-decoded bytes, so 19 MiB never rejects audio the
	// body limit admits, while bounding memory for callers that skip the body
	// limit.
	MaxAudioBytes = 19 << 20
	// DefaultLanguage is used when STTLanguage/TTSLanguage are empty.
	DefaultLanguage = "en-US"
	// DefaultLocalModel is the pocketsphinx-en-us model directory on Debian.
	DefaultLocalModel = "/usr/share/pocketsphinx/model/en-us"
	// DefaultOpenAIBaseURL is used when Settings.BaseURL is empty.
	DefaultOpenAIBaseURL = "https://api.openai.com"
	// DefaultOpenAIModel is used when Settings.Model is empty for "openai".
	DefaultOpenAIModel = "whisper-1"
	// GoogleSpeechURL is Speech-to-Text v1 recognize.
	GoogleSpeechURL = "https://speech.googleapis.com/v1/speech:recognize"
	// GoogleVoicesURL is Text-to-Speech v1 voices.list.
	GoogleVoicesURL = "https://texttospeech.googleapis.com/v1/voices"

	// defaultLocalTimeout bounds one local transcription (ffmpeg and
	// pocketsphinx together). pocketsphinx runs at ~0.1x real time here, so
	// 2 minutes covers ~15 minutes of audio while stopping a runaway decode.
	defaultLocalTimeout = 2 * time.Minute
	// defaultHTTPTimeout bounds one provider call. Google's synchronous
	// recognize takes up to 1 minute of audio and answers in seconds; the
	// upload of ~19 MiB on a slow uplink needs the rest.
	defaultHTTPTimeout = 90 * time.Second
	// defaultMaxDuration bounds the decoded length of audio for the local
	// provider: a voice command is seconds long, and pocketsphinx time grows
	// linearly, so longer input is most likely a mistake or abuse.
	defaultMaxDuration = 10 * time.Minute
)

// Audio is a recording to transcribe.
type Audio struct {
	Data     []byte // the recording as sent by the browser (container bytes)
	MimeType string // its media type, e.g. "audio/webm;codecs=opus"
}

// Voice is one text-to-speech voice, shaped like Google's Voice resource.
type Voice struct {
	Name                   string   `json:"name"`
	SSMLGender             string   `json:"ssmlGender"` // MALE, FEMALE, NEUTRAL or SSML_VOICE_GENDER_UNSPECIFIED
	LanguageCodes          []string `json:"languageCodes"`
	NaturalSampleRateHertz int      `json:"naturalSampleRateHertz"`
}

// Provider is one speech back end. Every error it returns is a
// *domain.Error with one of the Code* constants.
type Provider interface {
	// Transcribe returns the recognised text; "" when nothing was recognised.
	Transcribe(ctx context.Context, a Audio) (string, error)
	// Voices lists voices for a language code; "" lists all.
	Voices(ctx context.Context, language string) ([]Voice, error)
	// Verify makes a real test call (the settings service calls it before
	// marking a key verified); nil means the provider works.
	Verify(ctx context.Context) error
}

// Settings choose and configure the provider. They come from the settings
// service, which stores APIKey encrypted.
type Settings struct {
	Provider    string // "local", "google", "openai" or "" (off)
	APIKey      string // google: API key; openai: Bearer key
	KeyVerified bool   // set by the settings service after Verify succeeded
	BaseURL     string // openai: base URL without /v1 (a trailing /v1 is tolerated)
	Model       string // openai: model (default whisper-1); local: model dir; google: recognition model (optional)
	STTLanguage string // recognition language, default en-US
	TTSLanguage string // default language of the voice list, default en-US

	// Grammar is a JSGF grammar for the local provider; when set,
	// recognition is limited to the sentences it generates.
	Grammar string
	// Phrases is a list of expected phrases for the local provider; when set
	// (and Grammar is empty) a grammar accepting exactly one of them is
	// generated.
	Phrases []string
}

// String describes the settings without the key.
func (s Settings) String() string {
	key := "unset"
	if s.APIKey != "" {
		key = "set"
	}
	return "speech.Settings{provider=" + s.Provider + " key=" + key + " base_url=" + s.BaseURL + " model=" + s.Model + "}"
}

// Option tunes New and NewService.
type Option func(*options)

type options struct {
	httpClient    *http.Client
	googleSTT     string
	googleTTS     string
	localTimeout  time.Duration
	maxDuration   time.Duration
	maxAudioBytes int64
	concurrency   int
	lookPath      func(string) (string, error)
	mbrolaDir     string
}

func defaultOptions() options {
	return options{
		httpClient:    &http.Client{Timeout: defaultHTTPTimeout},
		googleSTT:     GoogleSpeechURL,
		googleTTS:     GoogleVoicesURL,
		localTimeout:  defaultLocalTimeout,
		maxDuration:   defaultMaxDuration,
		maxAudioBytes: MaxAudioBytes,
		concurrency:   runtime.NumCPU(),
		lookPath:      lookPath,
		mbrolaDir:     "/usr/share/mbrola",
	}
}

// WithHTTPClient sets the client used for google and openai.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithGoogleEndpoints overrides Google's recognize and voices URLs (tests,
// regional endpoints or an egress proxy). Empty strings keep the defaults.
func WithGoogleEndpoints(recognizeURL, voicesURL string) Option {
	return func(o *options) {
		if recognizeURL != "" {
			o.googleSTT = recognizeURL
		}
		if voicesURL != "" {
			o.googleTTS = voicesURL
		}
	}
}

// WithLocalTimeout bounds one local transcription.
func WithLocalTimeout(d time.Duration) Option { return func(o *options) { o.localTimeout = d } }

// WithMaxDuration bounds the decoded duration the local provider accepts.
func WithMaxDuration(d time.Duration) Option { return func(o *options) { o.maxDuration = d } }

// WithMaxAudioBytes bounds the decoded audio size (default MaxAudioBytes).
func WithMaxAudioBytes(n int64) Option { return func(o *options) { o.maxAudioBytes = n } }

// WithConcurrency bounds parallel local transcriptions (default: CPUs).
func WithConcurrency(n int) Option { return func(o *options) { o.concurrency = max(n, 1) } }

// New returns the provider the settings choose. Speech off yields a
// speech_not_configured error; unknown providers or unusable settings yield
// invalid_speech_settings. New does not check KeyVerified: the settings
// service calls Verify on the result before marking a key verified.
func New(s Settings, opts ...Option) (Provider, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return newProvider(s, o)
}

func newProvider(s Settings, o options) (Provider, error) {
	switch s.Provider {
	case ProviderOff:
		return nil, notConfigured("speech is not set up")
	case ProviderLocal:
		return newLocal(s, o)
	case ProviderGoogle:
		if s.APIKey == "" {
			return nil, notConfigured("the google provider needs an API key")
		}
		return newGoogle(s, o), nil
	case ProviderOpenAI:
		if s.APIKey == "" {
			return nil, notConfigured("the openai provider needs an API key")
		}
		return newOpenAI(s, o)
	default:
		return nil, domain.Invalid(CodeInvalidSettings, "unknown speech provider "+quote(s.Provider))
	}
}

func notConfigured(msg string) error {
	return &domain.Error{Kind: domain.ErrUnavailable, Code: CodeNotConfigured, Message: msg}
}

func quote(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s) + `"`
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return strings.TrimSpace(s)
}

func invalidSettings(msg string) error { return domain.Invalid(CodeInvalidSettings, msg) }

// GoString keeps the key out of %#v.
func (s Settings) GoString() string { return s.String() }
