package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestProbeErrorsInPlainWords: the add-server wizard's probe answers a
// failed probe with 400 probe_failed and a sentence with a hint, not a Go
// error chain; connection refused is not "host unreachable".
func TestProbeErrorsInPlainWords(t *testing.T) {
	h := newFleetHTTP(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	for _, tt := range []struct{ host, want string }{
		{"127.0.0.1", fmt.Sprintf("connection refused on port %d of 127.0.0.1: is sshd running", port)},
		{"no-such-host.invalid", "host name no-such-host.invalid could not be resolved"},
	} {
		code, body := h.do(t, "admin", http.MethodPost, "/api/v1/servers/probe", fmt.Sprintf(`{"host":%q,"port":%d}`, tt.host, port))
		e := decode[errorBody](t, body)
		if code != http.StatusBadRequest || e.Code != "probe_failed" || !strings.Contains(e.Error, tt.want) ||
			strings.Contains(e.Error, "remote:") || strings.Contains(e.Error, "unreachable") {
			t.Errorf("probe %s: %d %s, want 400 probe_failed with %q", tt.host, code, body, tt.want)
		}
	}
}
