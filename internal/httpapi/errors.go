package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/domain"
)

// errorBody is every error response: {"error": "...", "code": "..."}.
type errorBody struct {
	Error   string `json:"error"`
	Code    string `json:"code,omitempty"`
	Details any    `json:"details,omitempty"`
}

func writeError(c *gin.Context, status int, code, msg string) {
	c.Set(ctxErrCode, code)
	c.AbortWithStatusJSON(status, errorBody{Error: msg, Code: code})
}

// respondError is the one place that maps an error to a status and body.
// Internal errors show a generic text only; the cause goes to the log.
func (s *Server) respondError(c *gin.Context, err error) {
	var de *domain.Error
	if errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &de) {
		// The request's deadline (request_timeout_seconds) ran out in a
		// call that did not classify it.
		err = fmt.Errorf("%w (%v)", domain.Unavailable("request_timeout", "the request did not finish within its deadline; try again"), err)
	}
	status := statusOf(err)
	if status == http.StatusInternalServerError {
		s.deps.Log.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
		writeError(c, status, "internal", "internal server error")
		return
	}
	if status == http.StatusServiceUnavailable {
		s.deps.Log.Warn("request unavailable", "method", c.Request.Method, "path", logPath(c.Request.URL.Path), "err", err)
	}
	body := errorBody{Error: err.Error()}
	if errors.As(err, &de) {
		body = errorBody{Error: de.Message, Code: de.Code, Details: de.Details}
	}
	if status == http.StatusUnauthorized && body.Code == "" {
		body.Code = "unauthenticated"
	}
	c.AbortWithStatusJSON(status, body)
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, domain.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, domain.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, domain.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, domain.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, domain.ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, domain.ErrRateLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, domain.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, domain.ErrUnavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// maxJSONBody bounds ordinary request bodies; endpoints with larger bodies
// (speech) bind with their own limit.
const maxJSONBody = 1 << 20

// bindJSON decodes the request body into dst: text that is not UTF-8 or
// holds a NUL character (jsonTextProblem), unknown fields, null where the
// field cannot hold it, trailing data, wrong types and oversized bodies are
// 400/413 with a clear message. It writes the error response itself and
// reports false.
func bindJSON(c *gin.Context, dst any) bool { return bindJSONLimit(c, dst, maxJSONBody) }

func bindJSONLimit(c *gin.Context, dst any, limit int64) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err == nil {
		if code, msg := jsonTextProblem(raw); code != "" {
			writeError(c, http.StatusBadRequest, code, msg)
			return false
		}
		if msg := nullProblem(raw, dst, documentedNullable(c.Request.Method, c.FullPath())); msg != "" {
			writeError(c, http.StatusBadRequest, "invalid_request", msg)
			return false
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		err = dec.Decode(dst)
		if err == nil && dec.More() {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err == nil {
		return true
	}
	var maxErr *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	msg := err.Error()
	switch {
	case errors.As(err, &maxErr):
		writeError(c, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body larger than %d bytes", limit))
		return false
	case errors.Is(err, io.EOF):
		msg = "request body must be a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "malformed JSON: unexpected end of body"
	case errors.As(err, &syn):
		msg = fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		msg = fmt.Sprintf("field %q must be %s, not %s", field, jsonType(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(msg, "json: unknown field "):
		msg = "unknown field " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	writeError(c, http.StatusBadRequest, "invalid_request", msg)
	return false
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	default:
		return kind
	}
}

// nullProblem refuses what encoding/json would silently accept as "no
// change": a bare null body, and null for a top-level field that may not
// be null. The operation's request schema decides for the properties it
// documents (doc: property → nullable; null only where it says
// `nullable: true`, so "absent" and "null" never mean two things in a
// PATCH); for others the field's type does (a pointer, slice, map or
// interface may hold null). "" when fine.
func nullProblem(raw []byte, dst any, doc map[string]bool) string {
	trimmed := bytes.TrimSpace(raw)
	if bytes.Equal(trimmed, []byte("null")) {
		return "request body must be a JSON object, not null"
	}
	if len(trimmed) == 0 || trimmed[0] != '{' || !bytes.Contains(trimmed, []byte("null")) {
		return ""
	}
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(trimmed, &fields) != nil {
		return "" // the decoder reports the syntax error
	}
	for name, v := range fields {
		if !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		if nullable, ok := docProperty(doc, name); ok {
			if !nullable {
				return fmt.Sprintf("field %q must not be null (leave it out to keep the current value)", name)
			}
			continue
		}
		if f, ok := jsonField(t, name); ok {
			switch f.Type.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			default:
				return fmt.Sprintf("field %q must not be null", name)
			}
		}
	}
	return ""
}

// docProperty looks a key up the way encoding/json matches it to a field
// (exactly, else case-insensitively).
func docProperty(doc map[string]bool, name string) (nullable, ok bool) {
	if nullable, ok = doc[name]; ok {
		return nullable, true
	}
	for k, v := range doc {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return false, false
}

// jsonField finds the struct field (embedded structs included) that
// encoding/json decodes the key name into.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		key, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && key == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if sf, ok := jsonField(et, name); ok {
					return sf, true
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if key == "" {
			key = f.Name
		}
		if strings.EqualFold(key, name) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
