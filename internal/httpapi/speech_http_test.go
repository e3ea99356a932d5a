package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/speech"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// sttPhrases are operator commands spoken by espeak-ng in the tests.
var sttPhrases = []string{
	"open the settings page",
	"restart the web server",
	"show me the list of servers",
	"please check the disk usage",
}

func requireSpeechTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "espeak-ng", "pocketsphinx_continuous"} {
		testutil.RequireTool(t, tool)
	}
	if _, err := os.Stat(speech.DefaultLocalModel); err != nil {
		testutil.Unavailable(t, "pocketsphinx-en-us model at %s", speech.DefaultLocalModel)
	}
}

// recordWebm speaks text with espeak-ng and encodes it with ffmpeg the way
// Chrome's MediaRecorder does: WebM container, Opus at 48 kHz, 32 kb/s.
func recordWebm(t *testing.T, text string) []byte {
	t.Helper()
	dir := t.TempDir()
	wav, webm := filepath.Join(dir, "s.wav"), filepath.Join(dir, "s.webm")
	out, err := exec.Command("espeak-ng", "-w", wav, text).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command("ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-i", wav,
		"-c:a", "libopus", "-b:a", "32k", "-ar", "48000", "-f", "webm", webm).CombinedOutput()
	require.NoError(t, err, "%s", out)
	b, err := os.ReadFile(webm)
	require.NoError(t, err)
	return b
}

func sttBody(audio []byte, mime string) map[string]string {
	return map[string]string{"audio": base64.StdEncoding.EncodeToString(audio), "mime_type": mime}
}

func (e *areaEnv) saveSpeech(settings map[string]any) (int, []byte) {
	return e.do(http.MethodPut, "/api/v1/settings/speech", "admin", settings)
}

func (e *areaEnv) transcribe(body any) (int, string, []byte) {
	e.t.Helper()
	code, raw := e.do(http.MethodPost, "/v1/speech/stt", "user", body)
	var out struct {
		Text string `json:"text"`
	}
	if code == http.StatusOK {
		require.NoError(e.t, json.Unmarshal(raw, &out), "%s", raw)
	}
	return code, out.Text, raw
}

func wordErrs(ref, hyp string) int {
	r, h := strings.Fields(ref), strings.Fields(hyp)
	prev := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur := make([]int, len(h)+1)
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev = cur
	}
	return prev[len(h)]
}

// TestSpeechLocalHTTP posts real recordings (espeak-ng → ffmpeg webm/opus)
// to POST /v1/speech/stt with the local provider: exact with a phrase list,
// WER logged with the general model.
func TestSpeechLocalHTTP(t *testing.T) {
	requireSpeechTools(t)
	e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
	code, raw := e.do(http.MethodPost, "/v1/speech/stt", "", sttBody([]byte("x"), "audio/webm"))
	assert.Equal(t, http.StatusUnauthorized, code, "%s", raw)

	// Fresh install with the tools present: local is the default.
	code, raw = e.do(http.MethodGet, "/api/v1/settings/speech", "admin", nil)
	require.Equal(t, http.StatusOK, code, "%s", raw)
	var set map[string]any
	require.NoError(t, json.Unmarshal(raw, &set))
	assert.Equal(t, "local", set["provider"])
	assert.Equal(t, false, set["saved"])
	code, _ = e.do(http.MethodGet, "/api/v1/settings/speech", "user", nil)
	assert.Equal(t, http.StatusForbidden, code)

	recordings := make([][]byte, len(sttPhrases))
	for i, p := range sttPhrases {
		recordings[i] = recordWebm(t, p)
	}

	errs, words := 0, 0
	for i, p := range sttPhrases[:2] {
		code, text, raw := e.transcribe(sttBody(recordings[i], "audio/webm;codecs=opus"))
		require.Equal(t, http.StatusOK, code, "%s", raw)
		errs += wordErrs(p, text)
		words += len(strings.Fields(p))
		t.Logf("general model: %q -> %q", p, text)
	}
	t.Logf("general-model WER over HTTP: %.0f%% (%d/%d words)", 100*float64(errs)/float64(words), errs, words)

	code, raw = e.saveSpeech(map[string]any{"provider": "local", "phrases": sttPhrases, "ttsLanguage": "de"})
	require.Equal(t, http.StatusOK, code, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &set))
	assert.Equal(t, true, set["keyVerified"])
	assert.Equal(t, true, set["saved"])
	for i, p := range sttPhrases {
		code, text, raw := e.transcribe(sttBody(recordings[i], "audio/webm;codecs=opus"))
		require.Equal(t, http.StatusOK, code, "%s", raw)
		assert.Equal(t, p, text, "a phrase list makes recognition exact")
	}

	// Voices: the saved tts language when the query has none.
	var vs struct {
		Voices []speech.Voice `json:"voices"`
	}
	code, raw = e.do(http.MethodGet, "/v1/speech/voices", "user", nil)
	require.Equal(t, http.StatusOK, code, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &vs))
	names := map[string]bool{}
	for _, v := range vs.Voices {
		names[v.Name] = true
	}
	assert.True(t, names["gmw/de"], "%v", names)
	assert.False(t, names["gmw/en-US"])
	code, raw = e.do(http.MethodGet, "/v1/speech/voices?language=en-US", "user", nil)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(raw, &vs))
	require.NotEmpty(t, vs.Voices)
	assert.Equal(t, "gmw/en-US", vs.Voices[0].Name)

	// A phrase with a word missing from the dictionary fails the test call:
	// nothing is saved.
	code, raw = e.saveSpeech(map[string]any{"provider": "local", "phrases": []string{"restart zzqxword"}})
	assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
	assert.Equal(t, speech.CodeProviderError, errorOf(t, raw))
	assert.Contains(t, string(raw), "zzqxword")
	code, text, raw := e.transcribe(sttBody(recordings[0], "audio/webm"))
	require.Equal(t, http.StatusOK, code, "%s", raw)
	assert.Equal(t, sttPhrases[0], text, "the previous settings stay in force")
}

// TestSpeechInputErrorsHTTP: every bad input gets its {error}.
func TestSpeechInputErrorsHTTP(t *testing.T) {
	requireSpeechTools(t)
	e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
	cases := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"garbage base64", map[string]string{"audio": "!!!not base64***", "mime_type": "audio/webm"}, 400, speech.CodeInvalidAudio},
		{"wrong mime type", map[string]string{"audio": "AAAA", "mime_type": "video/mp4"}, 400, speech.CodeUnsupportedMIME},
		{"text mime type", map[string]string{"audio": "AAAA", "mime_type": "text/plain"}, 400, speech.CodeUnsupportedMIME},
		{"missing mime type", map[string]string{"audio": "AAAA"}, 400, speech.CodeUnsupportedMIME},
		{"empty audio", map[string]string{"audio": "", "mime_type": "audio/webm"}, 400, speech.CodeInvalidAudio},
		{"missing audio", map[string]string{"mime_type": "audio/webm"}, 400, speech.CodeInvalidAudio},
		{"undecodable audio", sttBody([]byte("this is not a webm recording at all"), "audio/webm"), 400, speech.CodeUndecodable},
		{"malformed JSON", `{"audio": "AAAA", `, 400, speech.CodeInvalidRequest},
		{"not JSON", `audio=AAAA`, 400, speech.CodeInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, raw := e.transcribe(tc.body)
			assert.Equal(t, tc.status, code, "%s", raw)
			assert.Equal(t, tc.code, errorOf(t, raw))
		})
	}
}

// patternReader yields prefix, n bytes of 'A' (valid base64 of zeros) and
// suffix without holding them, so the client side adds no memory.
type patternReader struct {
	prefix, suffix string
	n, off         int64
}

func (r *patternReader) Read(p []byte) (int, error) {
	total := int64(len(r.prefix)) + r.n + int64(len(r.suffix))
	if r.off >= total {
		return 0, io.EOF
	}
	i := 0
	for i < len(p) && r.off < total {
		switch {
		case r.off < int64(len(r.prefix)):
			p[i] = r.prefix[r.off]
		case r.off < int64(len(r.prefix))+r.n:
			p[i] = 'A'
		default:
			p[i] = r.suffix[r.off-int64(len(r.prefix))-r.n]
		}
		i++
		r.off++
	}
	return i, nil
}

func (r *patternReader) Len() int64 { return int64(len(r.prefix)) + r.n + int64(len(r.suffix)) }

func bigSTTBody(size int64) *patternReader {
	prefix, suffix := `{"mime_type":"audio/webm","audio":"`, `"}`
	n := size - int64(len(prefix)+len(suffix))
	n -= n % 4
	return &patternReader{prefix: prefix, suffix: suffix, n: n}
}

// rssKiB reads a field (VmRSS, VmHWM) of /proc/self/status.
func rssKiB(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			v, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return v
		}
	}
	t.Skip("no " + field)
	return 0
}

// fakeOpenAISpeech is an OpenAI-compatible transcription endpoint that
// reads the upload and answers text, or the given status and body.
func fakeOpenAISpeech(t *testing.T, status *atomic.Int32, body *atomic.Value) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if s := int(status.Load()); s != 0 && s != http.StatusOK {
			w.WriteHeader(s)
			_, _ = io.WriteString(w, body.Load().(string))
			return
		}
		_, _ = io.WriteString(w, `{"text":"upload received"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSpeechBodyLimitHTTP: a 26 MiB body is refused with 413 {error}; a
// 25 MiB body passes and its peak memory is measured and logged (budget:
// ≤ 150 MiB more RSS).
func TestSpeechBodyLimitHTTP(t *testing.T) {
	var status atomic.Int32
	var body atomic.Value
	srv := fakeOpenAISpeech(t, &status, &body)
	e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
	code, raw := e.saveSpeech(map[string]any{"provider": "openai", "apiKey": "sk-test", "baseUrl": srv.URL})
	require.Equal(t, http.StatusOK, code, "%s", raw)

	over := bigSTTBody(26 << 20)
	req, err := http.NewRequest(http.MethodPost, e.ts.URL+"/v1/speech/stt", over)
	require.NoError(t, err)
	req.ContentLength = over.Len()
	req.Header.Set("X-Test-User", "user")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", raw)
	assert.Equal(t, speech.CodeTooLarge, errorOf(t, raw))

	// 25 MiB exactly (18.75 MiB of audio), streamed through to the provider.
	debug.FreeOSMemory() // return what earlier tests left, so RSS growth is this upload's
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("cannot reset the RSS high-water mark: %v", err)
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := rssKiB(t, "VmRSS")
	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peakHeap.Load() {
				peakHeap.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	big := bigSTTBody(speech.MaxRequestBytes)
	req, err = http.NewRequest(http.MethodPost, e.ts.URL+"/v1/speech/stt", big)
	require.NoError(t, err)
	req.ContentLength = big.Len()
	req.Header.Set("X-Test-User", "user")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	close(stop)
	<-done
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	assert.JSONEq(t, `{"text":"upload received"}`, string(raw))
	rssGrowth := rssKiB(t, "VmHWM") - rssBefore
	heapGrowth := int64(peakHeap.Load()) - int64(before.HeapInuse)
	t.Logf("25 MiB upload: peak RSS +%.1f MiB, peak heap in use +%.1f MiB", float64(rssGrowth)/1024, float64(heapGrowth)/(1<<20))
	assert.LessOrEqual(t, rssGrowth, int64(150<<10), "budget: a 25 MiB upload raises peak RSS by ≤ 150 MiB")
}

// TestSpeechProviderErrorsHTTP: provider down, provider error bodies in
// Google's and OpenAI's documented shapes, speech off, unverified key.
func TestSpeechProviderErrorsHTTP(t *testing.T) {
	wav := silentWAV()

	t.Run("openai error body and provider down", func(t *testing.T) {
		var status atomic.Int32
		var body atomic.Value
		srv := fakeOpenAISpeech(t, &status, &body)
		e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
		code, raw := e.saveSpeech(map[string]any{"provider": "openai", "apiKey": "sk-secret-key", "baseUrl": srv.URL})
		require.Equal(t, http.StatusOK, code, "%s", raw)
		var set map[string]any
		require.NoError(t, json.Unmarshal(raw, &set))
		assert.Equal(t, true, set["apiKeySet"])
		assert.Equal(t, true, set["keyVerified"])
		assert.NotContains(t, string(raw), "sk-secret-key", "the key is never returned")

		status.Store(http.StatusInternalServerError)
		body.Store(`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
		code, _, raw = e.transcribe(sttBody(wav, "audio/wav"))
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeProviderError, errorOf(t, raw))
		assert.Contains(t, string(raw), "The server had an error")

		status.Store(http.StatusBadRequest)
		body.Store(`{"error":{"message":"Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'webm', 'wav']","type":"invalid_request_error","param":null,"code":null}}`)
		code, _, raw = e.transcribe(sttBody(wav, "audio/wav"))
		assert.Equal(t, http.StatusBadRequest, code, "%s", raw)
		assert.Contains(t, string(raw), "Invalid file format")

		// A failed test call on save stores nothing: the saved settings stay.
		status.Store(http.StatusUnauthorized)
		body.Store(`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		code, raw = e.saveSpeech(map[string]any{"provider": "openai", "apiKey": "sk-other", "baseUrl": srv.URL, "model": "m2"})
		assert.NotEqual(t, http.StatusOK, code, "%s", raw)
		assert.Contains(t, errorOf(t, raw), "provider_")
		stored, _, err := e.st.GetSpeechSettings(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "sk-secret-key", stored.APIKey)
		assert.Equal(t, "", stored.Model)

		srv.Close() // provider down
		code, _, raw = e.transcribe(sttBody(wav, "audio/wav"))
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeProviderUnavailable, errorOf(t, raw))
	})

	t.Run("google error body and provider down", func(t *testing.T) {
		// WAV reaches Google as LINEAR16 through ffmpeg: say so plainly
		// when ffmpeg is missing instead of failing on the error text.
		testutil.RequireTool(t, "ffmpeg")
		var fail atomic.Bool
		google := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			if fail.Load() {
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, `{"error":{"code":403,"message":"Cloud Speech-to-Text API has not been used in project 123 before or it is disabled.","status":"PERMISSION_DENIED"}}`)
				return
			}
			if strings.HasSuffix(r.URL.Path, "/voices") {
				_, _ = io.WriteString(w, `{"voices":[{"languageCodes":["en-US"],"name":"en-US-Standard-A","ssmlGender":"MALE","naturalSampleRateHertz":24000}]}`)
				return
			}
			_, _ = io.WriteString(w, `{"results":[{"alternatives":[{"transcript":"hello"}]}]}`)
		}))
		t.Cleanup(google.Close)
		e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil,
			speech.WithGoogleEndpoints(google.URL+"/v1/speech:recognize", google.URL+"/v1/voices"))
		code, raw := e.saveSpeech(map[string]any{"provider": "google", "apiKey": "AIza-test-key"})
		require.Equal(t, http.StatusOK, code, "%s", raw)
		code, text, raw := e.transcribe(sttBody(wav, "audio/wav"))
		require.Equal(t, http.StatusOK, code, "%s", raw)
		assert.Equal(t, "hello", text)
		code, raw = e.do(http.MethodGet, "/v1/speech/voices", "user", nil)
		require.Equal(t, http.StatusOK, code, "%s", raw)
		assert.JSONEq(t, `{"voices":[{"languageCodes":["en-US"],"name":"en-US-Standard-A","ssmlGender":"MALE","naturalSampleRateHertz":24000}]}`, string(raw))

		fail.Store(true)
		code, _, raw = e.transcribe(sttBody(wav, "audio/wav"))
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeProviderError, errorOf(t, raw))
		assert.Contains(t, string(raw), "has not been used")
		assert.NotContains(t, string(raw), "AIza-test-key")
		code, raw = e.do(http.MethodGet, "/v1/speech/voices", "user", nil)
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeProviderError, errorOf(t, raw))

		google.Close()
		code, _, raw = e.transcribe(sttBody(wav, "audio/wav"))
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeProviderUnavailable, errorOf(t, raw))
	})

	t.Run("save with the provider down stores nothing", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		closed := "http://" + ln.Addr().String()
		ln.Close()
		e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
		code, raw := e.saveSpeech(map[string]any{"provider": "openai", "apiKey": "sk-x", "baseUrl": closed})
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeProviderUnavailable, errorOf(t, raw))
		_, saved, err := e.st.GetSpeechSettings(t.Context())
		require.NoError(t, err)
		assert.False(t, saved)
	})

	t.Run("speech off", func(t *testing.T) {
		e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
		code, raw := e.saveSpeech(map[string]any{"provider": ""})
		require.Equal(t, http.StatusOK, code, "%s", raw)
		code, _, raw = e.transcribe(sttBody(wav, "audio/wav"))
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeNotConfigured, errorOf(t, raw))
		code, raw = e.do(http.MethodGet, "/v1/speech/voices", "user", nil)
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeNotConfigured, errorOf(t, raw))
	})

	t.Run("voices with an unverified key", func(t *testing.T) {
		e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
		// Settings stored with a key that never passed the test call.
		_, err := e.st.PutSpeechSettings(t.Context(), store.SpeechSettings{Provider: "google", APIKey: "AIza-unverified"})
		require.NoError(t, err)
		code, raw := e.do(http.MethodGet, "/v1/speech/voices", "user", nil)
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeKeyNotVerified, errorOf(t, raw))
		code, _, raw = e.transcribe(sttBody(wav, "audio/wav"))
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s", raw)
		assert.Equal(t, speech.CodeNotConfigured, errorOf(t, raw))
		code, raw = e.do(http.MethodGet, "/api/v1/settings/speech", "admin", nil)
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, string(raw), `"keyVerified":false`)
		assert.NotContains(t, string(raw), "AIza-unverified")
	})

	t.Run("settings validation", func(t *testing.T) {
		e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
		for _, body := range []any{
			map[string]any{"provider": "azure"},
			map[string]any{"provider": "google"},
			map[string]any{"provider": "openai", "apiKey": "k", "baseUrl": "ftp://example.com"},
			map[string]any{"provider": "local", "sttLanguage": "en US"},
			map[string]any{"provider": "local", "unknown": 1},
			`{"provider":`,
		} {
			code, raw := e.do(http.MethodPut, "/api/v1/settings/speech", "admin", body)
			assert.Equal(t, http.StatusBadRequest, code, "%v: %s", body, raw)
			errorOf(t, raw)
		}
		_, saved, err := e.st.GetSpeechSettings(t.Context())
		require.NoError(t, err)
		assert.False(t, saved)
	})
}

// silentWAV is 0.5 s of 16 kHz mono silence.
func silentWAV() []byte {
	const rate, n = 16000, 8000
	b := make([]byte, 44+2*n)
	copy(b, "RIFF")
	le32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	le32(b[16:], 16)
	b[20], b[22] = 1, 1
	le32(b[24:], rate)
	le32(b[28:], rate*2)
	b[32], b[34] = 2, 16
	copy(b[36:], "data")
	le32(b[40:], uint32(2*n))
	return b
}

func le32(b []byte, v uint32) { b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
