package httpapi

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestHandlerPanicIsCountedAndAnswered: a panic in a request handler of
// the full router is recovered by recoverPanics, answered with a JSON 500
// that says nothing about it, logged and counted for the health monitor
// (10 in 15 minutes restart the process); the router serves on.
func TestHandlerPanicIsCountedAndAnswered(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	panics := testutil.CountPanics(t)
	h.srv.engine.GET("/api/v1/test-panic", func(*gin.Context) {
		var m map[string]int
		m["the handler met input it did not expect"]++
	})
	for i := 1; i <= 3; i++ {
		r := h.do(req{method: http.MethodGet, path: "/api/v1/test-panic"})
		if r.code != http.StatusInternalServerError || r.code2(t) != "internal" {
			t.Fatalf("panicking handler answered %d %s", r.code, r.body)
		}
		if got := panics(); got != int64(i) {
			t.Fatalf("after %d panics the recorder counted %d", i, got)
		}
	}
	if r := h.do(req{method: http.MethodGet, path: "/api/v1/health"}); r.code != http.StatusOK {
		t.Fatalf("health after the panics: %d %s", r.code, r.body)
	}
}
