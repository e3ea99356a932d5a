package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// These cases need answers no local registry gives on demand (429 with
// Retry-After, a missing Docker-Content-Digest, RateLimit-Remaining as
// Docker Hub sends it), so a handler plays that registry; everything else
// is tested against the real one (registry_test.go).

func fakeRegistry(t *testing.T, h http.HandlerFunc) (host string, hits *atomic.Int32) {
	t.Helper()
	hits = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), hits
}

func plainEP(context.Context, string) (Endpoint, bool, error) {
	return Endpoint{PlainHTTP: true}, true, nil
}

func TestRateLimitedHostPausesUntilRetryAfter(t *testing.T) {
	host, hits := fakeRegistry(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	now := time.Now()
	c := New(Options{Endpoints: plainEP, Now: func() time.Time { return now }})
	ref := host + "/a/b:v1"
	r := c.Check(context.Background(), []ImageRef{{Ref: ref, LocalDigests: []string{"sha256:" + strings.Repeat("a", 64)}}})[0]
	if r.State != StateUnknown || r.Reason != ReasonRateLimited {
		t.Fatalf("%+v", r)
	}
	n := hits.Load()
	// Within Retry-After: not asked again, for any image of that host.
	r = c.Check(context.Background(), []ImageRef{{Ref: host + "/a/c:v1", LocalDigests: []string{"sha256:" + strings.Repeat("a", 64)}}})[0]
	if r.Reason != ReasonRateLimited || hits.Load() != n {
		t.Fatalf("asked again within Retry-After: %+v, %d → %d requests", r, n, hits.Load())
	}
	now = now.Add(121 * time.Second)
	c.Check(context.Background(), []ImageRef{{Ref: ref}})
	if hits.Load() == n {
		t.Fatal("not asked again after Retry-After")
	}
}

func TestMissingDigestHeaderFallsBackToGet(t *testing.T) {
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}`
	sum := sha256.Sum256([]byte(manifest))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	var remaining atomic.Value
	remaining.Store("90;w=21600")
	var gets atomic.Int32
	host, _ := fakeRegistry(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "application/vnd.oci.image.index.v1+json") {
			http.Error(w, "accept", http.StatusBadRequest)
			return
		}
		w.Header().Set("RateLimit-Remaining", remaining.Load().(string))
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		if r.Method == http.MethodGet {
			gets.Add(1)
			_, _ = w.Write([]byte(manifest))
		}
	})
	c := New(Options{Endpoints: plainEP})
	r := c.Check(context.Background(), []ImageRef{{Ref: host + "/a/b:v1", LocalDigests: []string{digest}}})[0]
	if r.State != StateUpToDate || r.RemoteDigest != digest || gets.Load() != 1 {
		t.Fatalf("%+v after %d GETs", r, gets.Load())
	}
	// Pull limit spent: HEAD still answers, no GET is spent on it.
	remaining.Store("0;w=21600")
	c.Forget("")
	c.Check(context.Background(), []ImageRef{{Ref: host + "/a/b:v1"}}) // learns the 0 from a HEAD
	r = c.Check(context.Background(), []ImageRef{{Ref: host + "/a/x:v1", LocalDigests: []string{digest}}})[0]
	if r.Reason != ReasonRateLimited {
		t.Fatalf("%+v", r)
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	host, _ := fakeRegistry(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("b", 64))
	})
	c := New(Options{Endpoints: plainEP, Concurrency: 3})
	refs := make([]ImageRef, 20)
	for i := range refs {
		refs[i] = ImageRef{Ref: host + "/a/img" + string(rune('a'+i)) + ":v1", LocalDigests: []string{"sha256:" + strings.Repeat("b", 64)}}
	}
	done := make(chan []Result)
	go func() { done <- c.Check(context.Background(), refs) }()
	deadline := time.After(10 * time.Second)
	for inFlight.Load() < 3 {
		select {
		case <-deadline:
			t.Fatal("requests never reached the bound")
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(release)
	res := <-done
	for _, r := range res {
		if r.State != StateUpToDate {
			t.Fatalf("%+v", r)
		}
	}
	if peak.Load() > 3 {
		t.Fatalf("%d requests in flight, bound 3", peak.Load())
	}
}
