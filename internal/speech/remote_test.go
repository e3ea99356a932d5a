package speech

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
)

const testKey = "AIzaSy-TEST-KEY-do-not-leak+/="

// fakeWebmOpus is enough of a WebM file for opusInfo: the OpusHead of its
// CodecPrivate with an input rate of 48 kHz.
func fakeWebmOpus() []byte {
	b := []byte("\x1a\x45\xdf\xa3....webm....OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00")
	return append(b, make([]byte, 100)...)
}

// requireCode asserts err is a *domain.Error with the code and kind.
func requireCode(t *testing.T, err error, code string, kind error) *domain.Error {
	t.Helper()
	require.Error(t, err)
	var de *domain.Error
	require.True(t, errors.As(err, &de), "not a domain.Error: %v", err)
	assert.Equal(t, code, de.Code, "error: %v", err)
	if kind != nil {
		assert.ErrorIs(t, err, kind)
	}
	assert.NotContains(t, err.Error(), testKey)
	assert.NotContains(t, de.Message, "AIzaSy")
	return de
}

func googleService(t *testing.T, srv *httptest.Server, verified bool) *Service {
	t.Helper()
	svc, err := NewService(Settings{Provider: ProviderGoogle, APIKey: testKey, KeyVerified: verified, STTLanguage: "de-DE"},
		WithGoogleEndpoints(srv.URL+"/v1/speech:recognize", srv.URL+"/v1/voices"))
	require.NoError(t, err)
	return svc
}

func TestGoogleTranscribeWebmOpus(t *testing.T) {
	audio := fakeWebmOpus()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "/v1/speech:recognize", r.URL.Path)
		assert.Equal(t, testKey, r.URL.Query().Get("key"))
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		assert.Empty(t, r.Header.Get("Authorization"))
		assert.Empty(t, r.TransferEncoding, "body must have a length, not be chunked")
		var body struct {
			Config struct {
				Encoding        string `json:"encoding"`
				SampleRateHertz int    `json:"sampleRateHertz"`
				LanguageCode    string `json:"languageCode"`
			} `json:"config"`
			Audio struct {
				Content string `json:"content"`
			} `json:"audio"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		assert.Equal(t, "WEBM_OPUS", body.Config.Encoding)
		assert.Equal(t, 48000, body.Config.SampleRateHertz)
		assert.Equal(t, "de-DE", body.Config.LanguageCode)
		got, err := base64.StdEncoding.DecodeString(body.Audio.Content)
		require.NoError(t, err)
		assert.Equal(t, audio, got)
		_, _ = io.WriteString(w, `{"results":[{"alternatives":[{"transcript":"hallo welt","confidence":0.92}]},`+
			`{"alternatives":[{"transcript":" wie geht's","confidence":0.8}],"resultEndTime":"2s"}],"totalBilledTime":"15s"}`)
	}))
	defer srv.Close()
	text, err := googleService(t, srv, true).Transcribe(context.Background(),
		base64.RawURLEncoding.EncodeToString(audio), "audio/webm;codecs=opus")
	require.NoError(t, err)
	assert.Equal(t, "hallo welt wie geht's", text)
}

func TestGoogleTranscribeNoSpeech(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"totalBilledTime":"15s","requestId":"1"}`)
	}))
	defer srv.Close()
	text, err := googleService(t, srv, true).TranscribeAudio(context.Background(),
		Audio{Data: fakeWebmOpus(), MimeType: "audio/ogg; codecs=opus"})
	require.NoError(t, err)
	assert.Equal(t, "", text)
}

func TestGoogleErrors(t *testing.T) {
	cases := []struct {
		status int
		body   string
		kind   error
		want   string
	}{
		{400, `{"error":{"code":400,"message":"Invalid recognition 'config': bad encoding.","status":"INVALID_ARGUMENT"}}`, domain.ErrInvalid, "bad encoding"},
		{403, `{"error":{"code":403,"message":"Cloud Speech-to-Text API has not been used in project 1 before or it is disabled.","status":"PERMISSION_DENIED"}}`, domain.ErrUnavailable, "has not been used"},
		{400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key. key=` + testKey + `","status":"INVALID_ARGUMENT"}}`, domain.ErrInvalid, "API key not valid"},
		{429, `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Requests'.","status":"RESOURCE_EXHAUSTED"}}`, domain.ErrRateLimited, "Quota exceeded"},
		{500, `{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`, domain.ErrUnavailable, "Internal error"},
		{502, `<html>bad gateway</html>`, domain.ErrUnavailable, "Bad Gateway"},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			svc := googleService(t, srv, true)
			_, err := svc.TranscribeAudio(context.Background(), Audio{Data: fakeWebmOpus(), MimeType: "audio/webm"})
			de := requireCode(t, err, CodeProviderError, tc.kind)
			assert.Contains(t, de.Message, tc.want)
			_, err = svc.Voices(context.Background(), "")
			requireCode(t, err, CodeProviderError, tc.kind)
		})
	}
}

func TestGoogleVoices(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, http.MethodGet, r.Method)
		assert.Equal(t, "/v1/voices", r.URL.Path)
		assert.Equal(t, testKey, r.URL.Query().Get("key"))
		lang := r.URL.Query().Get("languageCode")
		_, _ = io.WriteString(w, `{"voices":[{"languageCodes":["`+lang+`"],"name":"`+lang+`-Wavenet-A","ssmlGender":"FEMALE","naturalSampleRateHertz":24000}]}`)
	}))
	defer srv.Close()
	svc, err := NewService(Settings{Provider: ProviderGoogle, APIKey: testKey, KeyVerified: true, TTSLanguage: "fr-FR"},
		WithGoogleEndpoints(srv.URL+"/v1/speech:recognize", srv.URL+"/v1/voices"))
	require.NoError(t, err)
	vs, err := svc.Voices(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, []Voice{{Name: "fr-FR-Wavenet-A", SSMLGender: "FEMALE", LanguageCodes: []string{"fr-FR"}, NaturalSampleRateHertz: 24000}}, vs)
	vs, err = svc.Voices(context.Background(), "en-GB")
	require.NoError(t, err)
	assert.Equal(t, "en-GB-Wavenet-A", vs[0].Name)
	b, err := json.Marshal(vs[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"en-GB-Wavenet-A","ssmlGender":"FEMALE","languageCodes":["en-GB"],"naturalSampleRateHertz":24000}`, string(b))
}

func TestGoogleVerify(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		assert.Equal(t, testKey, r.URL.Query().Get("key"))
		if r.Method == http.MethodPost {
			var body map[string]map[string]any
			require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
			assert.Equal(t, "LINEAR16", body["config"]["encoding"])
			_, _ = io.WriteString(w, `{}`)
			return
		}
		_, _ = io.WriteString(w, `{"voices":[]}`)
	}))
	defer srv.Close()
	require.NoError(t, googleService(t, srv, false).Verify(context.Background()))
	assert.Equal(t, []string{"POST /v1/speech:recognize", "GET /v1/voices"}, paths)
}

func TestKeyNotVerified(t *testing.T) {
	for _, p := range []string{ProviderGoogle, ProviderOpenAI} {
		svc, err := NewService(Settings{Provider: p, APIKey: testKey})
		require.NoError(t, err)
		_, err = svc.Voices(context.Background(), "en")
		requireCode(t, err, CodeKeyNotVerified, domain.ErrUnavailable)
		_, err = svc.TranscribeAudio(context.Background(), Audio{Data: []byte("x"), MimeType: "audio/webm"})
		requireCode(t, err, CodeNotConfigured, domain.ErrUnavailable)
	}
}

func TestNotConfigured(t *testing.T) {
	for _, s := range []Settings{{}, {Provider: ProviderGoogle}, {Provider: ProviderOpenAI, KeyVerified: true}} {
		svc, err := NewService(s)
		require.NoError(t, err)
		_, err = svc.Transcribe(context.Background(), "AAAA", "audio/webm")
		requireCode(t, err, CodeNotConfigured, domain.ErrUnavailable)
		err = svc.Verify(context.Background())
		require.Error(t, err)
	}
	_, err := New(Settings{})
	requireCode(t, err, CodeNotConfigured, nil)
	_, err = NewService(Settings{Provider: "azure"})
	requireCode(t, err, CodeInvalidSettings, domain.ErrInvalid)
	_, err = NewService(Settings{Provider: ProviderOpenAI, APIKey: "k", BaseURL: "ftp://x"})
	requireCode(t, err, CodeInvalidSettings, domain.ErrInvalid)
}

// closedURL returns a URL on a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

func TestProviderDown(t *testing.T) {
	down := closedURL(t)
	g, err := NewService(Settings{Provider: ProviderGoogle, APIKey: testKey, KeyVerified: true},
		WithGoogleEndpoints(down+"/v1/speech:recognize", down+"/v1/voices"))
	require.NoError(t, err)
	o, err := NewService(Settings{Provider: ProviderOpenAI, APIKey: testKey, KeyVerified: true, BaseURL: down})
	require.NoError(t, err)
	for name, svc := range map[string]*Service{"google": g, "openai": o} {
		t.Run(name, func(t *testing.T) {
			_, err := svc.TranscribeAudio(context.Background(), Audio{Data: fakeWebmOpus(), MimeType: "audio/webm"})
			de := requireCode(t, err, CodeProviderUnavailable, domain.ErrUnavailable)
			assert.Contains(t, de.Message, "connection refused")
		})
	}
	_, err = g.Voices(context.Background(), "")
	requireCode(t, err, CodeProviderUnavailable, domain.ErrUnavailable)
}

func TestProviderTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	svc, err := NewService(Settings{Provider: ProviderOpenAI, APIKey: testKey, KeyVerified: true, BaseURL: srv.URL},
		WithHTTPClient(&http.Client{Timeout: 50 * time.Millisecond}))
	require.NoError(t, err)
	_, err = svc.TranscribeAudio(context.Background(), Audio{Data: []byte("RIFF...."), MimeType: "audio/wav"})
	de := requireCode(t, err, CodeProviderUnavailable, domain.ErrUnavailable)
	assert.Contains(t, de.Message, "timed out")
}

func TestOpenAITranscribe(t *testing.T) {
	audio := fakeWebmOpus()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "/v1/audio/transcriptions", r.URL.Path)
		assert.Equal(t, "Bearer "+testKey, r.Header.Get("Authorization"))
		assert.Empty(t, r.TransferEncoding)
		require.NoError(t, r.ParseMultipartForm(1<<20))
		assert.Equal(t, "whisper-1", r.FormValue("model"))
		assert.Equal(t, "json", r.FormValue("response_format"))
		assert.Equal(t, "en", r.FormValue("language"))
		f, fh, err := r.FormFile("file")
		require.NoError(t, err)
		assert.Equal(t, "audio.webm", fh.Filename)
		assert.Equal(t, "audio/webm", fh.Header.Get("Content-Type"))
		got, _ := io.ReadAll(f)
		assert.Equal(t, audio, got)
		_, _ = io.WriteString(w, `{"text":" Hello world. "}`)
	}))
	defer srv.Close()
	// A base URL ending in /v1 is tolerated.
	svc, err := NewService(Settings{Provider: ProviderOpenAI, APIKey: testKey, KeyVerified: true,
		BaseURL: srv.URL + "/v1/", STTLanguage: "en-US"})
	require.NoError(t, err)
	text, err := svc.Transcribe(context.Background(), base64.StdEncoding.EncodeToString(audio), "audio/webm;codecs=opus")
	require.NoError(t, err)
	assert.Equal(t, "Hello world.", text)
}

func TestOpenAIErrors(t *testing.T) {
	cases := []struct {
		status int
		body   string
		kind   error
		want   string
	}{
		{400, `{"error":{"message":"Invalid file format. Supported formats: ['flac', 'm4a', 'mp3']","type":"invalid_request_error","param":"file","code":null}}`, domain.ErrInvalid, "Invalid file format"},
		{401, `{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, domain.ErrUnavailable, "Incorrect API key provided: [REDACTED]"},
		{403, `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}`, domain.ErrUnavailable, "not supported"},
		{429, `{"error":{"message":"Rate limit reached for whisper-1","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, domain.ErrRateLimited, "Rate limit"},
		{500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, domain.ErrUnavailable, "server had an error"},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			svc, err := NewService(Settings{Provider: ProviderOpenAI, APIKey: testKey, KeyVerified: true, BaseURL: srv.URL})
			require.NoError(t, err)
			_, err = svc.TranscribeAudio(context.Background(), Audio{Data: []byte("ID3..."), MimeType: "audio/mpeg"})
			de := requireCode(t, err, CodeProviderError, tc.kind)
			assert.Contains(t, de.Message, tc.want)
		})
	}
}

func TestOpenAIBadAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `<html>`)
	}))
	defer srv.Close()
	svc, err := NewService(Settings{Provider: ProviderOpenAI, APIKey: testKey, KeyVerified: true, BaseURL: srv.URL})
	require.NoError(t, err)
	_, err = svc.TranscribeAudio(context.Background(), Audio{Data: []byte("x"), MimeType: "audio/wav"})
	requireCode(t, err, CodeProviderError, domain.ErrUnavailable)
}

func TestOpenAIVerifyAndVoices(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseMultipartForm(1<<20))
		_, fh, err := r.FormFile("file")
		require.NoError(t, err)
		assert.Equal(t, "audio.wav", fh.Filename)
		assert.Empty(t, r.FormValue("language"), "no language configured: let the model detect it")
		_, _ = io.WriteString(w, `{"text":""}`)
	}))
	defer srv.Close()
	svc, err := NewService(Settings{Provider: ProviderOpenAI, APIKey: testKey, BaseURL: srv.URL, TTSLanguage: "de-de"})
	require.NoError(t, err)
	require.NoError(t, svc.Verify(context.Background()))

	svc, err = NewService(Settings{Provider: ProviderOpenAI, APIKey: testKey, KeyVerified: true, BaseURL: srv.URL, TTSLanguage: "de-de"})
	require.NoError(t, err)
	vs, err := svc.Voices(context.Background(), "")
	require.NoError(t, err)
	require.Len(t, vs, 6)
	assert.Equal(t, Voice{Name: "alloy", SSMLGender: "SSML_VOICE_GENDER_UNSPECIFIED", LanguageCodes: []string{"de-DE"}, NaturalSampleRateHertz: 24000}, vs[0])
}

func TestSettingsStringHidesKey(t *testing.T) {
	s := Settings{Provider: ProviderGoogle, APIKey: testKey}
	assert.NotContains(t, s.String(), testKey)
	assert.True(t, strings.Contains(s.String(), "key=set"))
}
