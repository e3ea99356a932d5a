package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// TestJSONTextProblem: what bindJSON refuses before decoding, case by case.
func TestJSONTextProblem(t *testing.T) {
	for _, tc := range []struct {
		name, body, code string
	}{
		{"plain", `{"name": "web-1", "n": 2}`, ""},
		{"escaped quote and backslash", `{"name": "a\"b\\", "x": "\\u0000"}`, ""},
		{"escaped non-NUL control", `{"name": "a\u0001b\n"}`, ""},
		{"multi-byte UTF-8", `{"name": "Grüße 日本 🚀"}`, ""},
		{"a real U+FFFD is text", "{\"name\": \"a\xef\xbf\xbdb\"}", ""},
		{"escaped surrogate pair", `{"name": "\ud83d\ude80"}`, ""},
		{"invalid byte in a string", "{\"name\": \"a\xffb\"}", codeInvalidUTF8},
		{"truncated sequence", "{\"name\": \"a\xe2\x82\"}", codeInvalidUTF8},
		{"overlong encoding", "{\"name\": \"\xc0\xaf\"}", codeInvalidUTF8},
		{"invalid byte in a key", "{\"na\xffme\": \"x\"}", codeInvalidUTF8},
		{"escaped NUL", `{"name": "a\u0000b"}`, codeNULChar},
		{"escaped NUL in a key", `{"a\u0000": 1}`, codeNULChar},
		{"escaped NUL upper case", `{"name": "\U0000"}`, ""}, // not an escape JSON knows: the decoder's syntax error
		{"lone high surrogate", `{"name": "\ud800x"}`, codeInvalidUTF8},
		{"lone low surrogate", `{"name": "\udc00"}`, codeInvalidUTF8},
		{"high surrogate before a non-surrogate", `{"name": "\ud800\u0041"}`, codeInvalidUTF8},
		{"NUL outside a string is the decoder's", "{\"n\": 1\x00}", ""},
		{"truncated escape", `{"name": "\u00`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := jsonTextProblem([]byte(tc.body))
			if code != tc.code || (code != "" && msg == "") {
				t.Fatalf("%q: code %q (%s), want %q", tc.body, code, msg, tc.code)
			}
		})
	}
}

// bindTarget has one field of every shape the handlers bind.
type bindTarget struct {
	Name    string            `json:"name"`
	Port    int               `json:"port"`
	Enabled bool              `json:"enabled"`
	Note    *string           `json:"note"`
	Tags    []string          `json:"tags"`
	Labels  map[string]string `json:"labels"`
	Nested  struct {
		Value string `json:"value"`
	} `json:"nested"`
}

// bindOnce runs bindJSON on body and returns whether it accepted it, the
// decoded value and the answer.
func bindOnce(body []byte) (bool, bindTarget, *httptest.ResponseRecorder) {
	gin.SetMode(gin.ReleaseMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
	var dst bindTarget
	ok := bindJSON(c, &dst)
	return ok, dst, w
}

// strs lists every string of v (and the keys of its map).
func (v bindTarget) strs() []string {
	out := []string{v.Name, v.Nested.Value}
	if v.Note != nil {
		out = append(out, *v.Note)
	}
	out = append(out, v.Tags...)
	for k, s := range v.Labels {
		out = append(out, k, s)
	}
	return out
}

// FuzzBindJSON: bindJSON never panics, answers every refusal with a 4xx
// {error, code}, and what it accepts holds only valid UTF-8 without NUL,
// never a U+FFFD the client did not send, and no null for a field that
// cannot hold it.
func FuzzBindJSON(f *testing.F) {
	for _, s := range []string{
		`{"name": "a", "port": 22, "enabled": true, "note": null, "tags": ["x"], "labels": {"k": "v"}, "nested": {"value": "y"}}`,
		`{"name": "a\u0000"}`, "{\"name\": \"a\xffb\"}", `{"name": "\ud800"}`, `{"port": null}`, `null`, `{"zz": 1}`,
		`{"name": "\ud83d\ude80"}`, `[]`, `{"name": "a"} {"name": "b"}`, `{"nested": {"value": "\u0000"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ok, v, w := bindOnce(body)
		if !ok {
			if w.Code < 400 || w.Code >= 500 {
				t.Fatalf("refused with %d", w.Code)
			}
			var e errorBody
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error == "" || e.Code == "" {
				t.Fatalf("refusal without {error, code}: %s", w.Body.Bytes())
			}
			return
		}
		sentFFFD := bytes.Contains(body, []byte("\xef\xbf\xbd")) || bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`))
		for _, s := range v.strs() {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Fatalf("accepted %q holding invalid UTF-8 or NUL: %q", body, s)
			}
			if !sentFFFD && strings.ContainsRune(s, utf8.RuneError) {
				t.Fatalf("accepted %q and decoded a replacement character: %q", body, s)
			}
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(body, &fields) == nil {
			for _, k := range []string{"name", "port", "enabled", "nested"} {
				for fk, raw := range fields {
					if strings.EqualFold(fk, k) && string(bytes.TrimSpace(raw)) == "null" {
						t.Fatalf("accepted null for %s: %q", k, body)
					}
				}
			}
		}
	})
}

// FuzzJSONTextProblem: jsonTextProblem never panics, and a body it lets
// through decodes (when it is JSON) to strings without NUL, and without a
// U+FFFD the client did not send.
func FuzzJSONTextProblem(f *testing.F) {
	for _, s := range []string{`{"a": "b"}`, `"\u0000"`, "\"\xff\"", `"\ud800\udc00"`, `"\udfff"`, `"\\u0000"`, `{"a\u0000": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		code, _ := jsonTextProblem(raw)
		if code != "" {
			return
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		sentFFFD := bytes.Contains(raw, []byte("\xef\xbf\xbd")) || bytes.Contains(bytes.ToLower(raw), []byte(`\ufffd`))
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case string:
				if strings.ContainsRune(x, 0) || (!sentFFFD && strings.ContainsRune(x, utf8.RuneError)) {
					t.Fatalf("%q passed but decodes to %q", raw, x)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
	})
}
