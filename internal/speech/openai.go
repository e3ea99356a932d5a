package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// OpenAI calls an OpenAI-compatible POST {base}/v1/audio/transcriptions
// with a Bearer key. The recording is sent as it came (OpenAI accepts webm,
// ogg, wav, mp3 and m4a), so this provider needs no ffmpeg.
type OpenAI struct {
	key      string
	base     string // without trailing "/v1"
	model    string
	language string // ISO 639-1 or "" to let the model detect it
	ttsLang  string
	client   *http.Client
}

func newOpenAI(s Settings, o options) (*OpenAI, error) {
	base := strings.TrimRight(orDefault(s.BaseURL, DefaultOpenAIBaseURL), "/")
	base = strings.TrimSuffix(base, "/v1")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, invalidSettings("the openai base URL must be an http(s) URL without credentials")
	}
	lang := ""
	if s.STTLanguage != "" { // OpenAI wants ISO 639-1 ("en"), not "en-US"
		lang, _, _ = strings.Cut(strings.ToLower(strings.ReplaceAll(s.STTLanguage, "_", "-")), "-")
	}
	return &OpenAI{
		key:      s.APIKey,
		base:     base,
		model:    orDefault(s.Model, DefaultOpenAIModel),
		language: lang,
		ttsLang:  orDefault(s.TTSLanguage, DefaultLanguage),
		client:   o.httpClient,
	}, nil
}

// openAIExt is the file name extension OpenAI uses to detect the format.
var openAIExt = map[string]string{"webm": "webm", "ogg": "ogg", "wav": "wav", "mp3": "mp3", "mp4": "m4a"}

// openAIError is the OpenAI error body {error:{message, type, param, code}};
// code is a string or null.
type openAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// Transcribe uploads the recording as multipart/form-data.
func (p *OpenAI) Transcribe(ctx context.Context, a Audio) (string, error) {
	f, err := parseMIME(a.MimeType)
	if err != nil {
		return "", err
	}
	// The multipart envelope is built around the audio rather than copying
	// it, and the length is exact so the upload is not chunked.
	var env bytes.Buffer
	mw := multipart.NewWriter(&env)
	_ = mw.WriteField("model", p.model)
	_ = mw.WriteField("response_format", "json")
	if p.language != "" {
		_ = mw.WriteField("language", p.language)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="audio.`+openAIExt[f.Container]+`"`)
	h.Set("Content-Type", f.Mime)
	if _, err := mw.CreatePart(h); err != nil {
		return "", internalErr("cannot encode the request")
	}
	prefix := bytes.Clone(env.Bytes())
	env.Reset()
	_ = mw.Close()
	suffix := env.Bytes()
	body := func() io.Reader {
		return io.MultiReader(bytes.NewReader(prefix), bytes.NewReader(a.Data), bytes.NewReader(suffix))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/v1/audio/transcriptions", body())
	if err != nil {
		return "", invalidSettings("the openai base URL is invalid")
	}
	req.ContentLength = int64(len(prefix) + len(a.Data) + len(suffix))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return "", transportError(ctx, "openai", req.URL.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var oe openAIError
		msg := ""
		if json.Unmarshal(readErrorBody(resp), &oe) == nil {
			msg = oe.Error.Message
		}
		return "", statusError("openai", resp.StatusCode, oe.Error.Type, msg, p.key)
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&out); err != nil || out.Text == nil {
		return "", badResponse("openai")
	}
	return strings.TrimSpace(*out.Text), nil
}

// openAIVoices are the built-in voices of OpenAI's /v1/audio/speech that
// every TTS model accepts. OpenAI documents no gender for them, so
// SSMLGender is SSML_VOICE_GENDER_UNSPECIFIED; they speak every supported
// language, so languageCodes echoes the requested one; their output is
// 24 kHz.
var openAIVoices = []string{"alloy", "echo", "fable", "onyx", "nova", "shimmer"}

// Voices returns OpenAI's fixed voice list without a network call.
func (p *OpenAI) Voices(_ context.Context, language string) ([]Voice, error) {
	lang := CanonicalLanguage(orDefault(language, p.ttsLang))
	vs := make([]Voice, 0, len(openAIVoices))
	for _, n := range openAIVoices {
		vs = append(vs, Voice{Name: n, SSMLGender: "SSML_VOICE_GENDER_UNSPECIFIED",
			LanguageCodes: []string{lang}, NaturalSampleRateHertz: 24000})
	}
	return vs, nil
}

// Verify transcribes one second of silence as WAV: it proves the base URL,
// the key and the model together, and works on compatible servers that
// lack /v1/models.
func (p *OpenAI) Verify(ctx context.Context) error {
	_, err := p.Transcribe(ctx, Audio{Data: silenceWAV(silenceWAVSeconds), MimeType: "audio/wav"})
	return err
}
