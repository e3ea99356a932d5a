package registry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/registry"
	"github.com/lcmproject/lcm/internal/testutil"
)

// pushTiny stores repos × tags distinct images through the distribution
// API: one shared config and layer blob (uploaded once, mounted into the
// other repositories) and one manifest per tag that differs by an
// annotation. It returns the references and their manifest digests.
func pushTiny(tb testing.TB, reg *testutil.Registry, repos, tags int) ([]string, []string) {
	tb.Helper()
	do := func(method, u string, body []byte, ctype string, want int) *http.Response {
		req, err := http.NewRequest(method, u, bytes.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			tb.Fatalf("%s %s: %d, want %d", method, u, resp.StatusCode, want)
		}
		return resp
	}
	digest := func(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }
	layer := []byte("tiny layer")
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	blobs := [][]byte{config, layer}
	var refs, digests []string
	for r := 0; r < repos; r++ {
		repo := fmt.Sprintf("bench/app%03d", r)
		for _, b := range blobs {
			if r == 0 {
				resp := do(http.MethodPost, reg.URL+"/v2/"+repo+"/blobs/uploads/", nil, "", http.StatusAccepted)
				loc, err := url.Parse(resp.Header.Get("Location"))
				if err != nil {
					tb.Fatal(err)
				}
				u := reg.URL + loc.Path
				q := loc.Query()
				q.Set("digest", digest(b))
				do(http.MethodPut, u+"?"+q.Encode(), b, "application/octet-stream", http.StatusCreated)
				continue
			}
			do(http.MethodPost, reg.URL+"/v2/"+repo+"/blobs/uploads/?mount="+digest(b)+"&from=bench/app000", nil, "", http.StatusCreated)
		}
		for t := 0; t < tags; t++ {
			m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
				"config":      map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(config), "size": len(config)},
				"layers":      []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": digest(layer), "size": len(layer)}},
				"annotations": map[string]string{"lcm.bench": fmt.Sprintf("%d-%d", r, t)}})
			tag := fmt.Sprintf("v%d", t)
			do(http.MethodPut, reg.URL+"/v2/"+repo+"/manifests/"+tag, m, "application/vnd.oci.image.manifest.v1+json", http.StatusCreated)
			refs = append(refs, repo+":"+tag)
			digests = append(digests, digest(m))
		}
	}
	return refs, digests
}

// BenchmarkCheck500 is issue 15's budget: the registry check of 500
// distinct images (100 repositories × 5 tags) against the local registry
// in ≤ 10 s, cold (a new Checker each time: no cached digests or tokens),
// through the anonymous bearer-token flow (one token per repository, as
// on Docker Hub). docs/benchmarks.md has the figures.
func BenchmarkCheck500(b *testing.B) {
	open := testutil.StartRegistry(b, testutil.RegistryOptions{})
	names, digests := pushTiny(b, open, 100, 5)
	reg := testutil.StartRegistry(b, testutil.RegistryOptions{RootDir: open.RootDir, Token: &testutil.TokenAuth{AnonymousPull: true}})
	refs := make([]registry.ImageRef, len(names))
	for i, n := range names {
		// Every tenth image is behind the registry (an update).
		local := digests[i]
		if i%10 == 0 {
			local = "sha256:" + strings.Repeat("0", 64)
		}
		refs[i] = registry.ImageRef{Ref: reg.Host + "/" + n, LocalDigests: []string{local}}
	}
	ep := func(context.Context, string) (registry.Endpoint, bool, error) {
		return registry.Endpoint{PlainHTTP: true}, true, nil
	}
	b.Run("cold", func(b *testing.B) {
		tokens := reg.TokenRequests()
		n := 0
		for b.Loop() {
			n++
			c := registry.New(registry.Options{Endpoints: ep})
			res := c.Check(context.Background(), refs)
			for i, r := range res {
				wantState := registry.StateUpToDate
				if i%10 == 0 {
					wantState = registry.StateUpdateAvailable
				}
				if r.State != wantState {
					b.Fatalf("%s: %+v", r.Ref, r)
				}
			}
		}
		b.ReportMetric(float64(len(refs)), "images/op")
		b.ReportMetric(float64(reg.TokenRequests()-tokens)/float64(n), "tokens/op")
	})
	b.Run("cached", func(b *testing.B) {
		c := registry.New(registry.Options{Endpoints: ep})
		c.Check(context.Background(), refs)
		for b.Loop() {
			c.Check(context.Background(), refs)
		}
	})
}
