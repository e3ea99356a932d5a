//go:build lcmtest

package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/safe"
)

// lcmtestPanicSubject is the bus subject whose subscriber panics.
const lcmtestPanicSubject = "lcm.lcmtest.panic"

// Test builds only (go build -tags lcmtest): POST /api/v1/lcmtest/panic
// makes the real lcm-api panic in one kind of goroutine, through the same
// recovery production code uses — ?in=http (default) in this request's
// handler (recoverPanics), ?in=goroutine in a background goroutine
// (safe.Go), ?in=bus in a NATS subscriber (bus.Subscribe). The
// self-healing end-to-end test counts ten of them into exit code 70.
func init() {
	testRoutes = func(s *Server) {
		if s.deps.Bus != nil { // subscribed for the process's lifetime
			_, _ = s.deps.Bus.Subscribe(lcmtestPanicSubject, func(string, []byte) {
				panic("lcmtest: injected panic in a bus subscriber")
			})
		}
		s.engine.POST("/api/v1/lcmtest/panic", func(c *gin.Context) {
			switch c.Query("in") {
			case "goroutine":
				safe.Go("lcmtest goroutine", func() { panic("lcmtest: injected panic in a goroutine") })
			case "bus":
				if s.deps.Bus == nil || s.deps.Bus.Notify(lcmtestPanicSubject, []byte("{}")) != nil {
					writeError(c, http.StatusServiceUnavailable, "bus_unavailable", "no bus")
					return
				}
			default:
				panic("lcmtest: injected panic in an HTTP handler")
			}
			c.JSON(http.StatusAccepted, gin.H{"injected": c.Query("in")})
		})
	}
}
