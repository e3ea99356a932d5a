package speech

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
)

func TestDecodeBase64Variants(t *testing.T) {
	data := []byte("\xfb\xff\xfe hello \x00\x01 world!")
	std := base64.StdEncoding.EncodeToString(data)
	require.Contains(t, std, "+", "sample must exercise the alphabet difference")
	cases := map[string]string{
		"std":          std,
		"raw std":      base64.RawStdEncoding.EncodeToString(data),
		"url":          base64.URLEncoding.EncodeToString(data),
		"raw url":      base64.RawURLEncoding.EncodeToString(data),
		"line breaks":  std[:8] + "\r\n" + std[8:16] + "\n" + std[16:],
		"data url":     "data:audio/webm;codecs=opus;base64," + std,
		"surrounding ": "  " + std + "\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeBase64(strings.NewReader(in), 1<<20)
			require.NoError(t, err)
			assert.Equal(t, data, got)
		})
	}
}

func TestDecodeBase64Errors(t *testing.T) {
	cases := map[string]struct{ in, code string }{
		"garbage":       {"this is not base64!!", CodeInvalidAudio},
		"one extra":     {"QUJD" + "Q", CodeInvalidAudio},
		"pad in middle": {"QQ==QUJD", CodeInvalidAudio},
		"empty":         {"", CodeInvalidAudio},
		"only space":    {" \n ", CodeInvalidAudio},
		"data url text": {"data:text/plain,hello", CodeInvalidAudio},
		"too large":     {base64.StdEncoding.EncodeToString(make([]byte, 101)), CodeTooLarge},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeBase64(strings.NewReader(tc.in), 100)
			var de *domain.Error
			require.True(t, errors.As(err, &de), "%v", err)
			assert.Equal(t, tc.code, de.Code)
		})
	}
}

func TestParseMIME(t *testing.T) {
	ok := map[string]string{
		"audio/webm": "webm", "audio/webm;codecs=opus": "webm", "Audio/WebM; codecs=\"opus\"": "webm",
		"audio/ogg; codecs=opus": "ogg", "audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3",
		"audio/mp4": "mp4", "audio/mp4;codecs=mp4a.40.2": "mp4", "audio/x-m4a": "mp4",
	}
	for in, want := range ok {
		c, err := ParseMIME(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, c, in)
	}
	for _, in := range []string{"", "video/mp4", "text/plain", "audio/", "audio/webm;;", "application/octet-stream", "audio/flac"} {
		_, err := ParseMIME(in)
		var de *domain.Error
		require.True(t, errors.As(err, &de), in)
		assert.Equal(t, CodeUnsupportedMIME, de.Code, in)
		assert.ErrorIs(t, err, domain.ErrInvalid)
	}
}

func TestServiceValidation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("provider must not be called for invalid input")
	}))
	defer srv.Close()
	svc, err := NewService(Settings{Provider: ProviderOpenAI, APIKey: testKey, KeyVerified: true, BaseURL: srv.URL},
		WithMaxAudioBytes(1000))
	require.NoError(t, err)
	cases := map[string]struct{ b64, mime, code string }{
		"garbage base64": {"%%%not-base64%%%", "audio/webm", CodeInvalidAudio},
		"empty audio":    {"", "audio/webm", CodeInvalidAudio},
		"wrong mime":     {"AAAA", "image/png", CodeUnsupportedMIME},
		"no mime":        {"AAAA", "", CodeUnsupportedMIME},
		"too large":      {base64.StdEncoding.EncodeToString(make([]byte, 1001)), "audio/webm", CodeTooLarge},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Transcribe(context.Background(), tc.b64, tc.mime)
			requireCode(t, err, tc.code, nil)
		})
	}
	_, err = svc.TranscribeAudio(context.Background(), Audio{MimeType: "audio/webm"})
	requireCode(t, err, CodeInvalidAudio, domain.ErrInvalid)
}

func TestDecodeSTTRequest(t *testing.T) {
	data := []byte("\x1aE\xdf\xa3 some webm bytes \xff\xfe")
	b64 := base64.StdEncoding.EncodeToString(data)
	escaped := strings.ReplaceAll(b64, "/", `\/`) // what PHP and some encoders send
	cases := map[string]string{
		"plain":          `{"audio":"` + b64 + `","mime_type":"audio/webm;codecs=opus"}`,
		"reordered":      ` { "mime_type" : "audio/webm;codecs=opus" , "audio" : "` + b64 + `" } `,
		"escaped slash":  `{"audio":"` + escaped + `","mime_type":"audio\/webm;codecs=opus"}`,
		"unicode escape": `{"audio":"` + strings.Replace(b64, "E", `\u0045`, 1) + `","mime_type":"audio/webm;codecs=opus"}`,
		"unknown fields": `{"lang":"en","audio":"` + b64 + `","x":{"a":[1,2,{"b":"}"}]},"n":-1.5e3,"t":true,"z":null,"mime_type":"audio/webm;codecs=opus"}`,
		"url-safe":       `{"audio":"` + base64.RawURLEncoding.EncodeToString(data) + `","mime_type":"audio/webm;codecs=opus"}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := DecodeSTTRequest(strings.NewReader(body), 0)
			require.NoError(t, err)
			assert.Equal(t, data, a.Data)
			assert.Equal(t, "audio/webm;codecs=opus", a.MimeType)
		})
	}
}

func TestDecodeSTTRequestErrors(t *testing.T) {
	cases := map[string]struct{ body, code string }{
		"not json":       {`hello`, CodeInvalidRequest},
		"array":          {`[]`, CodeInvalidRequest},
		"truncated":      {`{"audio":"QUJD`, CodeInvalidRequest},
		"no audio":       {`{"mime_type":"audio/webm"}`, CodeInvalidAudio},
		"null audio":     {`{"audio":null,"mime_type":"audio/webm"}`, CodeInvalidAudio},
		"empty audio":    {`{"audio":"","mime_type":"audio/webm"}`, CodeInvalidAudio},
		"audio number":   {`{"audio":12,"mime_type":"audio/webm"}`, CodeInvalidRequest},
		"bad base64":     {`{"audio":"!!!!","mime_type":"audio/webm"}`, CodeInvalidAudio},
		"no mime":        {`{"audio":"QUJD"}`, CodeUnsupportedMIME},
		"two audios":     {`{"audio":"QUJD","audio":"QUJD","mime_type":"audio/webm"}`, CodeInvalidRequest},
		"missing colon":  {`{"audio" "QUJD"}`, CodeInvalidRequest},
		"trailing comma": {`{"audio":"QUJD",}`, CodeInvalidRequest},
		"control char":   {"{\"audio\":\"QU\nJD\",\"mime_type\":\"audio/webm\"}", CodeInvalidRequest},
		"too large":      {`{"audio":"` + base64.StdEncoding.EncodeToString(make([]byte, 200)) + `","mime_type":"audio/webm"}`, CodeTooLarge},
		// Text that is not UTF-8 or holds NUL, refused for its bytes as
		// bindJSON refuses it in every other body.
		"invalid UTF-8 in audio":     {"{\"audio\":\"QU\xffJD\",\"mime_type\":\"audio/webm\"}", CodeInvalidUTF8},
		"invalid UTF-8 in mime":      {"{\"audio\":\"QUJD\",\"mime_type\":\"audio/\xc0\xafwebm\"}", CodeInvalidUTF8},
		"invalid UTF-8 in a key":     {"{\"au\xffdio\":\"QUJD\",\"mime_type\":\"audio/webm\"}", CodeInvalidUTF8},
		"truncated UTF-8":            {"{\"audio\":\"QUJD\",\"mime_type\":\"a\xe2\x82\"}", CodeInvalidUTF8},
		"NUL in audio":               {`{"audio":"QU\u0000JD","mime_type":"audio/webm"}`, CodeNULCharacter},
		"NUL in mime":                {`{"audio":"QUJD","mime_type":"audio/webm\u0000"}`, CodeNULCharacter},
		"lone high surrogate":        {`{"audio":"QUJD","mime_type":"a\ud800b"}`, CodeInvalidUTF8},
		"lone low surrogate":         {`{"audio":"QUJD","mime_type":"a\udc00b"}`, CodeInvalidUTF8},
		"surrogate pair is fine too": {`{"audio":"QUJD","mime_type":"a\ud83d\ude80","x":"日本"}`, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := DecodeSTTRequest(strings.NewReader(tc.body), 100)
			if tc.code == "" {
				if err != nil || a.MimeType != "a🚀" {
					t.Fatalf("%v %q", err, a.MimeType)
				}
				return
			}
			requireCode(t, err, tc.code, nil)
		})
	}
}

func TestDecodeSTTRequestBodyLimit(t *testing.T) {
	body := `{"audio":"` + base64.StdEncoding.EncodeToString(make([]byte, 3000)) + `","mime_type":"audio/webm"}`
	rec := httptest.NewRecorder()
	r := http.MaxBytesReader(rec, io.NopCloser(strings.NewReader(body)), 1000)
	_, err := DecodeSTTRequest(r, 0)
	de := requireCode(t, err, CodeTooLarge, domain.ErrTooLarge)
	assert.Contains(t, de.Message, "1000 bytes")
}

// b64Body streams {"audio": base64(n zero-ish bytes), "mime_type": …}
// without holding it, like a client upload arriving on the socket.
func b64Body(n int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, `{"mime_type":"audio/webm","audio":"`)
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		chunk := bytes.Repeat([]byte{0x1a, 0x45, 0xdf, 0xa3}, 16<<10)
		for left := n; left > 0; left -= len(chunk) {
			_, _ = enc.Write(chunk[:min(left, len(chunk))])
		}
		_ = enc.Close()
		_, _ = io.WriteString(pw, `"}`)
		_ = pw.Close()
	}()
	return pr
}

// TestDecodeSTTRequestMemory measures the allocation of decoding the
// largest body the endpoint admits (25 MiB of JSON, 18.75 MiB of audio).
// Total allocation bounds the peak heap growth from above.
func TestDecodeSTTRequestMemory(t *testing.T) {
	const audioBytes = MaxRequestBytes / 4 * 3 // fills the 25 MiB body
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, err := DecodeSTTRequest(b64Body(audioBytes-64), 0)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, a.Data, audioBytes-64)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("decoding %d MiB of audio from a %d MiB body allocated %.1f MiB in total",
		len(a.Data)>>20, MaxRequestBytes>>20, float64(alloc)/(1<<20))
	assert.Less(t, alloc, uint64(80<<20), "allocation must stay far below the 150 MiB RSS budget")
}

func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"", "QUJD", "QUI", "QQ", "Q", "-_-_", "data:audio/webm;base64,QUJD", "QQ==QQ==", "\u00e9\u00e9"} {
		f.Add([]byte(s), s)
	}
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		// Any spelling of valid data decodes back to it.
		if len(data) > 0 {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				got, err := DecodeBase64(strings.NewReader(enc.EncodeToString(data)), 1<<20)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("round trip %q: %v", data, err)
				}
			}
		}
		// Arbitrary text never panics and fails only with domain errors.
		got, err := DecodeBase64(strings.NewReader(text), 1<<20)
		var de *domain.Error
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("non-domain error %T %v", err, err)
		}
		// Whatever the standard decoder accepts, we accept identically.
		if want, stdErr := base64.StdEncoding.DecodeString(text); stdErr == nil && len(want) > 0 {
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("std accepts %q -> %x, we got %x, %v", text, want, got, err)
			}
		}
	})
}

func FuzzDecodeSTTRequest(f *testing.F) {
	f.Add(`{"audio":"QUJD","mime_type":"audio/webm"}`)
	f.Add(`{"x":[{"y":"\"}"}],"audio":"QU\/J\u0044","mime_type":"audio/ogg; codecs=opus"}`)
	f.Add(`{"audio":"QQ"`)
	f.Fuzz(func(t *testing.T, body string) {
		a, err := DecodeSTTRequest(strings.NewReader(body), 1<<16)
		var de *domain.Error
		if err != nil {
			if !errors.As(err, &de) {
				t.Fatalf("non-domain error %T %v", err, err)
			}
			return
		}
		// What we accept, encoding/json agrees on when the body is valid
		// JSON with unique fields.
		var ref struct {
			Audio    string `json:"audio"`
			MimeType string `json:"mime_type"`
		}
		// (encoding/json replaces invalid UTF-8 with U+FFFD; we keep bytes,
		// and ParseMIME rejects them later.)
		if utf8.ValidString(body) && json.Unmarshal([]byte(body), &ref) == nil && strings.Count(body, `"mime_type"`) == 1 {
			if ref.MimeType != a.MimeType {
				t.Fatalf("mime %q, encoding/json says %q", a.MimeType, ref.MimeType)
			}
			if want, err := base64.StdEncoding.DecodeString(ref.Audio); err == nil && !bytes.Equal(want, a.Data) {
				t.Fatalf("audio %x, want %x", a.Data, want)
			}
		}
		if len(a.Data) == 0 {
			t.Fatal("accepted empty audio")
		}
	})
}

func FuzzParseMIME(f *testing.F) {
	for _, s := range []string{"audio/webm;codecs=opus", "audio/ogg; codecs=\"opus\"", "audio/", ";", "audio/mp4;a=b;a=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseMIME(s)
		if err == nil && c == "" {
			t.Fatal("accepted without container")
		}
		if err != nil && !errors.Is(err, domain.ErrInvalid) {
			t.Fatalf("wrong kind: %v", err)
		}
	})
}
