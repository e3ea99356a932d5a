package httpapi

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// What one access-log line may carry, and how fast lines of requests
// nobody signed in for may be written. Each bound says why.
const (
	// maxLoggedPath caps the path a line carries: a client that sends a
	// megabyte of path, signed in or not, gets one short line.
	maxLoggedPath = 256
	// maxLoggedField caps the query and the user agent (debug level):
	// both are the client's to choose and just as unbounded.
	maxLoggedField = 256
	// anonLinesPerSecond and anonLineBurst bound the lines of
	// unauthenticated requests: a flood from the internet (scanners, a
	// broken client, an attack) writes at most ~20 lines a second after a
	// burst of 200, never one line per request. Signed-in callers are
	// logged in full; what was left out is counted
	// (lcm_http_access_log_suppressed_total) and summed up in one line once
	// lines flow again.
	anonLinesPerSecond = 20
	anonLineBurst      = 200
)

// logPath is p, cut at maxLoggedPath bytes (on a rune boundary) with its
// full length noted.
func logPath(p string) string { return capField(p, maxLoggedPath) }

// capField cuts s at max bytes (on a rune boundary) and notes its length.
func capField(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + fmt.Sprintf("…(%d bytes)", len(s))
}

// lineLimiter is a token bucket for access-log lines.
type lineLimiter struct {
	mu         sync.Mutex
	rate       float64 // tokens per second
	burst      float64
	tokens     float64
	last       time.Time
	suppressed int64 // lines left out since the last summary
	now        func() time.Time
}

func newLineLimiter(perSecond, burst int) *lineLimiter {
	return &lineLimiter{rate: float64(perSecond), burst: float64(burst), tokens: float64(burst), now: time.Now}
}

// allow takes a token; when it gets one after lines were left out, it
// also returns how many (for the summary line), and resets the count.
func (l *lineLimiter) allow() (ok bool, suppressedBefore int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	if l.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	n := l.suppressed
	l.suppressed = 0
	return true, n
}
