package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	dto "github.com/prometheus/client_model/go"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/metrics"
)

// TestLogPathIsBounded: a megabyte of path becomes one short, valid line.
func TestLogPathIsBounded(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     string
	}{
		{"short", "/api/v1/servers", "/api/v1/servers"},
		{"at the cap", "/" + strings.Repeat("a", maxLoggedPath-1), "/" + strings.Repeat("a", maxLoggedPath-1)},
		{"a megabyte", "/" + strings.Repeat("a", 1<<20), "/" + strings.Repeat("a", maxLoggedPath-1) + "…(1048577 bytes)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := logPath(c.in); got != c.want {
				t.Fatalf("got %d bytes %.40q…, want %d bytes", len(got), got, len(c.want))
			}
		})
	}
	// A cut in the middle of a rune leaves valid UTF-8.
	in := "/" + strings.Repeat("é", 400)
	if got := logPath(in); !utf8.ValidString(got) || len(got) > maxLoggedPath+20 {
		t.Fatalf("cut path: valid %v, %d bytes", utf8.ValidString(got), len(got))
	}
}

// TestAccessLogFloodIsBounded: 1,500 unauthenticated requests with a
// megabyte of path and of user agent each (debug level, which logs the
// agent) write a bounded log — every line capped, at most the burst plus
// the rate's share of lines, the rest counted and summed up in one line —
// while every signed-in request keeps its line.
func TestAccessLogFloodIsBounded(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	gin.SetMode(gin.ReleaseMode)
	s := &Server{deps: Deps{Log: logger, AccessLog: true, Debug: true}, engine: gin.New()}
	s.engine.Use(s.accessLog())
	s.engine.NoRoute(func(c *gin.Context) {
		if u := c.GetHeader("X-Test-User"); u != "" {
			c.Set(ctxPrincipal, &domain.Principal{Username: u})
		}
		writeError(c, http.StatusNotFound, "not_found", "no such endpoint")
	})
	big := strings.Repeat("a", 1<<20)
	before := counterValue(t)
	start := time.Now()
	const flood = 1500
	for i := 0; i < flood; i++ {
		r := httptest.NewRequest(http.MethodGet, "/"+big, nil)
		r.Header.Set("User-Agent", big)
		s.engine.ServeHTTP(httptest.NewRecorder(), r)
	}
	elapsed := time.Since(start)
	for i := 0; i < 50; i++ {
		r := httptest.NewRequest(http.MethodGet, "/signed-in", nil)
		r.Header.Set("X-Test-User", "alice")
		s.engine.ServeHTTP(httptest.NewRecorder(), r)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	anon, signed := 0, 0
	for _, l := range lines {
		if len(l) > 2*maxLoggedPath+2*maxLoggedField+400 {
			t.Fatalf("a line of %d bytes", len(l))
		}
		switch {
		case strings.Contains(l, "user=alice"):
			signed++
		case strings.Contains(l, `msg="http request"`):
			anon++
		}
	}
	maxAnon := anonLineBurst + int(elapsed.Seconds()*anonLinesPerSecond) + 1
	if anon > maxAnon || anon < anonLineBurst {
		t.Fatalf("%d lines for %d unauthenticated requests in %s, want %d–%d", anon, flood, elapsed, anonLineBurst, maxAnon)
	}
	if signed != 50 {
		t.Fatalf("%d of 50 signed-in requests logged", signed)
	}
	suppressed := counterValue(t) - before
	if int(suppressed) != flood-anon {
		t.Fatalf("suppressed counter %v, want %d", suppressed, flood-anon)
	}
	if len(out) > 1<<20 {
		t.Fatalf("%d bytes of log for the flood", len(out))
	}
}

// TestLineLimiter: the bucket refills at its rate, and the first line
// after a gap reports how many were left out.
func TestLineLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := newLineLimiter(2, 3)
	l.now = func() time.Time { return now }
	for i := 0; i < 3; i++ {
		if ok, _ := l.allow(); !ok {
			t.Fatalf("burst line %d refused", i)
		}
	}
	for i := 0; i < 5; i++ {
		if ok, _ := l.allow(); ok {
			t.Fatalf("line %d beyond the burst allowed", i)
		}
	}
	now = now.Add(500 * time.Millisecond) // one token
	if ok, left := l.allow(); !ok || left != 5 {
		t.Fatalf("after refill: %v, %d left out", ok, left)
	}
	if ok, _ := l.allow(); ok {
		t.Fatal("second line after one token allowed")
	}
	now = now.Add(time.Hour)
	for i := 0; i < 3; i++ {
		if ok, _ := l.allow(); !ok {
			t.Fatalf("refilled burst line %d refused", i)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// counterValue reads lcm_http_access_log_suppressed_total.
func counterValue(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.AccessLogSuppressed.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
