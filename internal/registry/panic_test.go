package registry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

type panickyTransport struct{}

func (panickyTransport) RoundTrip(*http.Request) (*http.Response, error) {
	panic("the transport broke")
}

// TestCheckPanicIsRecovered: a check that panics in its goroutine (one per
// distinct reference) is recovered and counted; its images read unknown
// with the reason in plain words, the others are not affected.
func TestCheckPanicIsRecovered(t *testing.T) {
	panics := testutil.CountPanics(t)
	c := New(Options{Endpoints: plainEP, HTTPClient: &http.Client{Transport: panickyTransport{}}})
	digest := "sha256:" + strings.Repeat("a", 64)
	rs := c.Check(context.Background(), []ImageRef{
		{Ref: "registry.example.test/a/b:v1", LocalDigests: []string{digest}},
		{Ref: "registry.example.test/a/c:v1", LocalDigests: []string{digest}},
		{Ref: "registry.example.test/a/b:v1", LocalDigests: []string{digest}},
	})
	for i, r := range rs {
		if r.State != StateUnknown || !strings.Contains(r.Detail, "internal error") {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if got := panics(); got != 2 {
		t.Fatalf("%d panics counted, want 2 (one per distinct reference)", got)
	}
}
