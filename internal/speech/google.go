package speech

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// Google calls Cloud Speech-to-Text v1 speech:recognize and Text-to-Speech
// v1 voices with an API key in the "key" query parameter, as Google
// documents for API keys.
type Google struct {
	key     string
	sttLang string
	ttsLang string
	model   string
	sttURL  string
	ttsURL  string
	client  *http.Client
	tc      transcoder
}

func newGoogle(s Settings, o options) *Google {
	g := &Google{
		key:     s.APIKey,
		sttLang: orDefault(s.STTLanguage, DefaultLanguage),
		ttsLang: orDefault(s.TTSLanguage, DefaultLanguage),
		model:   strings.TrimSpace(s.Model),
		sttURL:  o.googleSTT,
		ttsURL:  o.googleTTS,
		client:  o.httpClient,
		tc:      transcoder{lookPath: o.lookPath, maxDuration: o.maxDuration},
	}
	return g
}

// googleConfig is RecognitionConfig (v1), the fields LCM sets.
type googleConfig struct {
	Encoding        string `json:"encoding"`
	SampleRateHertz int    `json:"sampleRateHertz"`
	LanguageCode    string `json:"languageCode"`
	Model           string `json:"model,omitempty"`
}

// googleError is Google's error body {error:{code, message, status}}.
type googleError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

// Transcribe sends Opus in WebM or Ogg as WEBM_OPUS / OGG_OPUS directly and
// transcodes other containers to 16 kHz LINEAR16 with ffmpeg first.
func (g *Google) Transcribe(ctx context.Context, a Audio) (string, error) {
	f, err := parseMIME(a.MimeType)
	if err != nil {
		return "", err
	}
	cfg := googleConfig{LanguageCode: g.sttLang, Model: g.model}
	data := a.Data
	if ok, rate := opusInfo(f, data); ok {
		cfg.Encoding, cfg.SampleRateHertz = "WEBM_OPUS", rate
		if f.Container == "ogg" {
			cfg.Encoding = "OGG_OPUS"
		}
	} else {
		if _, err := g.tc.lookPath("ffmpeg"); err != nil {
			return "", domain.Invalid(CodeUnsupportedMIME,
				f.Mime+" needs ffmpeg on the server for Google; send Opus in audio/webm or audio/ogg")
		}
		if data, err = g.tc.toPCM(ctx, data); err != nil {
			return "", err
		}
		cfg.Encoding, cfg.SampleRateHertz = "LINEAR16", pcmRate
	}
	return g.recognize(ctx, cfg, data)
}

func (g *Google) recognize(ctx context.Context, cfg googleConfig, audio []byte) (string, error) {
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", internalErr("cannot encode the request")
	}
	prefix := append(append([]byte(`{"config":`), cfgJSON...), `,"audio":{"content":"`...)
	suffix := []byte(`"}}`)
	body := func() io.Reader {
		return io.MultiReader(bytes.NewReader(prefix), &b64Reader{src: audio}, bytes.NewReader(suffix))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.sttURL+"?key="+url.QueryEscape(g.key), body())
	if err != nil {
		return "", notConfigured("the Google speech URL is invalid")
	}
	// The audio is streamed as base64 without building the JSON in memory;
	// the length is exact so the request is not chunked.
	req.ContentLength = int64(len(prefix)+len(suffix)) + int64(base64.StdEncoding.EncodedLen(len(audio)))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
	req.Header.Set("Content-Type", "application/json")
	var out struct {
		Results []struct {
			Alternatives []struct {
				Transcript string  `json:"transcript"`
				Confidence float64 `json:"confidence"`
			} `json:"alternatives"`
		} `json:"results"`
	}
	if err := g.do(ctx, req, &out); err != nil {
		return "", err
	}
	var parts []string
	for _, r := range out.Results {
		if len(r.Alternatives) > 0 {
			if t := strings.TrimSpace(r.Alternatives[0].Transcript); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, " "), nil
}

// Voices calls voices.list for a language ("" = the TTS language).
func (g *Google) Voices(ctx context.Context, language string) ([]Voice, error) {
	q := url.Values{}
	if lang := orDefault(language, g.ttsLang); lang != "" {
		q.Set("languageCode", lang)
	}
	q.Set("key", g.key)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.ttsURL+"?"+q.Encode(), nil)
	if err != nil {
		return nil, notConfigured("the Google voices URL is invalid")
	}
	var out struct {
		Voices []Voice `json:"voices"`
	}
	if err := g.do(ctx, req, &out); err != nil {
		return nil, err
	}
	if out.Voices == nil {
		out.Voices = []Voice{}
	}
	return out.Voices, nil
}

// Verify recognises one second of silence (LINEAR16, no ffmpeg needed) and
// lists the voices, so both APIs the key is used for are proven enabled.
func (g *Google) Verify(ctx context.Context) error {
	cfg := googleConfig{Encoding: "LINEAR16", SampleRateHertz: pcmRate, LanguageCode: g.sttLang, Model: g.model}
	if _, err := g.recognize(ctx, cfg, make([]byte, pcmRate*2)); err != nil {
		return err
	}
	_, err := g.Voices(ctx, "")
	return err
}

// do sends req and decodes a 2xx JSON answer into out, or maps the failure.
func (g *Google) do(ctx context.Context, req *http.Request, out any) error {
	resp, err := g.client.Do(req)
	if err != nil {
		return transportError(ctx, "google", req.URL.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var ge googleError
		body := readErrorBody(resp)
		msg := ""
		if json.Unmarshal(body, &ge) == nil {
			msg = ge.Error.Message
		}
		return statusError("google", resp.StatusCode, ge.Error.Status, msg, g.key)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
		return badResponse("google")
	}
	return nil
}

// b64Reader streams the standard base64 encoding of src.
type b64Reader struct {
	src   []byte
	buf   []byte // encoded bytes not yet read
	store []byte // reused backing array of buf
}

func (r *b64Reader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if len(r.src) == 0 {
			return 0, io.EOF
		}
		// Whole 3-byte groups until the end, so the concatenated chunks
		// equal the encoding of src.
		n := min(len(r.src), 3*4096)
		r.store = base64.StdEncoding.AppendEncode(r.store[:0], r.src[:n])
		r.buf = r.store
		r.src = r.src[n:]
	}
	k := copy(p, r.buf)
	r.buf = r.buf[k:]
	return k, nil
}
