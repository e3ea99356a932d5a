package mcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// adminAuth admits any key as an admin from 127.0.0.1 (the panic test
// needs a working guard around a broken service).
type adminAuth struct{}

func (adminAuth) AuthenticateMCP(context.Context, string) (*domain.Principal, error) {
	return &domain.Principal{UserID: "admin", Roles: []string{domain.RoleAdmin}}, nil
}
func (adminAuth) AllowAPIKey(context.Context, string) (bool, time.Duration, error) {
	return true, 0, nil
}
func (adminAuth) ClientAddr(context.Context, string, []string) netip.Addr {
	return netip.MustParseAddr("127.0.0.1")
}
func (adminAuth) Allowed(context.Context, netip.Addr) bool { return true }

// panickyAuth panics in the HTTP part of a request (the key check).
type panickyAuth struct{ adminAuth }

func (panickyAuth) AuthenticateMCP(context.Context, string) (*domain.Principal, error) {
	panic("the key check broke")
}

// TestPanicsAreRecoveredAndCounted: the go-sdk runs every MCP method in a
// goroutine of its own that recovers nothing, so a panicking tool (here a
// service without its store) would end the process; recoverMethods turns it
// into an error answer and counts it. A panic in the HTTP part (the key
// check) is answered 500 by the listener's recoverer and counted as well.
// The listener serves on after both.
func TestPanicsAreRecoveredAndCounted(t *testing.T) {
	panics := testutil.CountPanics(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := httptest.NewServer(NewHandler(NewService(nil), adminAuth{}, log))
	t.Cleanup(ts.Close)
	c := sdk.NewClient(&sdk.Implementation{Name: "panic-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL + Path,
		HTTPClient: &http.Client{Transport: bearerRT{key: "lcm_test"}, Timeout: 10 * time.Second}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for i := 1; i <= 2; i++ {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fleet_summary"})
		if err == nil && !res.IsError {
			t.Fatalf("a panicking tool answered a result: %+v", res)
		}
		if got := panics(); got != int64(i) {
			t.Fatalf("after %d tool panics %d were counted", i, got)
		}
	}
	if tools, err := cs.ListTools(context.Background(), nil); err != nil || len(tools.Tools) == 0 {
		t.Fatalf("the server after the panics: %v", err)
	}

	broken := httptest.NewServer(NewHandler(NewService(nil), panickyAuth{}, log))
	t.Cleanup(broken.Close)
	req, _ := http.NewRequest(http.MethodPost, broken.URL+Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer lcm_x")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || panics() != 3 {
		t.Fatalf("panicking key check: %d, %d panics counted", resp.StatusCode, panics())
	}
}
