package registry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/registry"
	"github.com/lcmproject/lcm/internal/testutil"
)

// plain is the endpoint of the test registries: plain HTTP on 127.0.0.1.
func plain(user, pass string) registry.EndpointSource {
	return func(context.Context, string) (registry.Endpoint, bool, error) {
		return registry.Endpoint{Username: user, Password: pass, PlainHTTP: true}, true, nil
	}
}

func check1(t *testing.T, c *registry.Checker, ref string, local ...string) registry.Result {
	t.Helper()
	res := c.Check(context.Background(), []registry.ImageRef{{Ref: ref, LocalDigests: local}})
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	return res[0]
}

func want(t *testing.T, r registry.Result, state registry.State, reason registry.Reason) {
	t.Helper()
	if r.State != state || r.Reason != reason {
		t.Fatalf("%s: state %s reason %q (%s), want %s %q", r.Ref, r.State, r.Reason, r.Detail, state, reason)
	}
}

// TestCheckAgainstRealRegistry pushes images with skopeo to Debian's
// docker-registry and checks them: unchanged → up to date, the tag pushed
// again with other content → update available, a tag that does not
// exist → unknown/not_found. The same storage is then served by a
// registry with Basic authentication and one with the bearer-token flow.
func TestCheckAgainstRealRegistry(t *testing.T) {
	open := testutil.StartRegistry(t, testutil.RegistryOptions{})
	ref := open.Host + "/team/app:v1"
	d1 := open.PushImage(t, "team/app", "v1", testutil.TestImage{Files: map[string]string{"version": "1"}}, "")
	if !strings.HasPrefix(d1, "sha256:") {
		t.Fatalf("digest %q", d1)
	}

	c := registry.New(registry.Options{Endpoints: plain("", "")})
	r := check1(t, c, ref, "sha256:0000000000000000000000000000000000000000000000000000000000000000", open.Host+"/team/app@"+d1)
	want(t, r, registry.StateUpToDate, "")
	if r.RemoteDigest != d1 || r.Cached || r.Name != ref {
		t.Fatalf("first check: %+v", r)
	}
	if r = check1(t, c, ref, d1); !r.Cached || r.State != registry.StateUpToDate {
		t.Fatalf("second check not from the cache: %+v", r)
	}

	d2 := open.PushImage(t, "team/app", "v1", testutil.TestImage{Files: map[string]string{"version": "2"}}, "")
	if d2 == d1 {
		t.Fatal("the new push has the old digest")
	}
	// The cache still answers the old digest until its TTL; a fresh
	// checker (or Forget) asks again.
	c.Forget(open.Host)
	r = check1(t, c, ref, d1)
	want(t, r, registry.StateUpdateAvailable, "")
	if r.RemoteDigest != d2 {
		t.Fatalf("remote %s, want %s", r.RemoteDigest, d2)
	}
	want(t, check1(t, c, open.Host+"/team/app:nope", d1), registry.StateUnknown, registry.ReasonNotFound)
	want(t, check1(t, c, open.Host+"/team/missing:v1", d1), registry.StateUnknown, registry.ReasonNotFound)
	want(t, check1(t, c, ref), registry.StateUnknown, registry.ReasonNoLocalDigest)
	want(t, check1(t, c, open.Host+"/team/app@"+d1, d1), registry.StateUnknown, registry.ReasonPinned)
	want(t, check1(t, c, "Not A Reference", d1), registry.StateUnknown, registry.ReasonInvalidReference)
	if err := c.Ping(context.Background(), open.Host, registry.Endpoint{PlainHTTP: true}); err != nil {
		t.Fatalf("ping: %v", err)
	}

	// Several references at once, in order, the same one asked once.
	res := c.Check(context.Background(), []registry.ImageRef{{Ref: ref, LocalDigests: []string{d2}}, {Ref: "nope nope"}, {Ref: ref, LocalDigests: []string{d1}}})
	if res[0].State != registry.StateUpToDate || res[1].Reason != registry.ReasonInvalidReference || res[2].State != registry.StateUpdateAvailable {
		t.Fatalf("batch: %+v", res)
	}

	// A registry that nobody answers for.
	dead := registry.New(registry.Options{Endpoints: plain("", ""), Timeout: 5 * time.Second})
	want(t, check1(t, dead, "127.0.0.1:1/x/y:v1", d1), registry.StateUnknown, registry.ReasonUnreachable)

	t.Run("basic", func(t *testing.T) {
		reg := testutil.StartRegistry(t, testutil.RegistryOptions{RootDir: open.RootDir, Htpasswd: map[string]string{"ci": "Pass-Word-1"}})
		ref := reg.Host + "/team/app:v1"
		want(t, check1(t, registry.New(registry.Options{Endpoints: plain("", "")}), ref, d2), registry.StateUnknown, registry.ReasonUnauthorized)
		want(t, check1(t, registry.New(registry.Options{Endpoints: plain("ci", "wrong")}), ref, d2), registry.StateUnknown, registry.ReasonUnauthorized)
		good := registry.New(registry.Options{Endpoints: plain("ci", "Pass-Word-1")})
		want(t, check1(t, good, ref, d2), registry.StateUpToDate, "")
		want(t, check1(t, good, reg.Host+"/team/app:v9", d2), registry.StateUnknown, registry.ReasonNotFound)
		if err := good.Ping(context.Background(), reg.Host, registry.Endpoint{Username: "ci", Password: "Pass-Word-1", PlainHTTP: true}); err != nil {
			t.Fatalf("ping with the right password: %v", err)
		}
		err := good.Ping(context.Background(), reg.Host, registry.Endpoint{Username: "ci", Password: "nope", PlainHTTP: true})
		if registry.ReasonOf(err) != registry.ReasonUnauthorized {
			t.Fatalf("ping with a wrong password: %v", err)
		}
		// Pushing through the authenticated registry works with the password.
		d := reg.PushImage(t, "team/basic", "v1", testutil.TestImage{Files: map[string]string{"b": "1"}}, "ci:Pass-Word-1")
		want(t, check1(t, good, reg.Host+"/team/basic:v1", d), registry.StateUpToDate, "")
	})

	t.Run("anonymous token", func(t *testing.T) {
		reg := testutil.StartRegistry(t, testutil.RegistryOptions{RootDir: open.RootDir, Token: &testutil.TokenAuth{AnonymousPull: true, Users: map[string]string{"ci": "Pass-Word-1"}}})
		now := time.Now()
		clock := func() time.Time { return now }
		c := registry.New(registry.Options{Endpoints: plain("", ""), Now: clock, CacheTTL: time.Minute})
		ref := reg.Host + "/team/app:v1"
		want(t, check1(t, c, ref, d1), registry.StateUpdateAvailable, "")
		if n := reg.TokenRequests(); n != 1 {
			t.Fatalf("%d token requests, want 1", n)
		}
		// Past the digest cache, within the token's life: no new token.
		now = now.Add(2 * time.Minute)
		if r := check1(t, c, ref, d2); r.Cached || r.State != registry.StateUpToDate {
			t.Fatalf("after the cache: %+v", r)
		}
		if n := reg.TokenRequests(); n != 1 {
			t.Fatalf("%d token requests, want the cached token", n)
		}
		want(t, check1(t, c, reg.Host+"/team/app:v9", d2), registry.StateUnknown, registry.ReasonNotFound)
		// Several tags of one repository checked together share one token.
		before := reg.TokenRequests()
		fresh := registry.New(registry.Options{Endpoints: plain("", "")})
		batch := []registry.ImageRef{{Ref: ref, LocalDigests: []string{d2}}, {Ref: reg.Host + "/team/app:v7"}, {Ref: reg.Host + "/team/app:v8"}, {Ref: reg.Host + "/team/app:v9"}}
		for i, r := range fresh.Check(context.Background(), batch) {
			if (i == 0 && r.State != registry.StateUpToDate) || (i > 0 && r.Reason != registry.ReasonNotFound) {
				t.Fatalf("batch %d: %+v", i, r)
			}
		}
		if n := reg.TokenRequests() - before; n != 1 {
			t.Fatalf("%d token requests for one repository, want 1", n)
		}
		// Credentials the token server refuses.
		want(t, check1(t, registry.New(registry.Options{Endpoints: plain("ci", "wrong")}), ref, d2), registry.StateUnknown, registry.ReasonUnauthorized)
		if err := c.Ping(context.Background(), reg.Host, registry.Endpoint{Username: "ci", Password: "Pass-Word-1", PlainHTTP: true}); err != nil {
			t.Fatalf("ping with credentials: %v", err)
		}
		if err := c.Ping(context.Background(), reg.Host, registry.Endpoint{Username: "ci", Password: "x", PlainHTTP: true}); registry.ReasonOf(err) != registry.ReasonUnauthorized {
			t.Fatalf("ping with a wrong password: %v", err)
		}
	})

	t.Run("private token", func(t *testing.T) {
		reg := testutil.StartRegistry(t, testutil.RegistryOptions{RootDir: open.RootDir, Token: &testutil.TokenAuth{Users: map[string]string{"ci": "Pass-Word-1"}}})
		ref := reg.Host + "/team/app:v1"
		want(t, check1(t, registry.New(registry.Options{Endpoints: plain("", "")}), ref, d2), registry.StateUnknown, registry.ReasonUnauthorized)
		want(t, check1(t, registry.New(registry.Options{Endpoints: plain("ci", "Pass-Word-1")}), ref, d2), registry.StateUpToDate, "")
		d := reg.PushImage(t, "team/private", "v1", testutil.TestImage{Files: map[string]string{"p": "1"}}, "ci:Pass-Word-1")
		want(t, check1(t, registry.New(registry.Options{Endpoints: plain("ci", "Pass-Word-1")}), reg.Host+"/team/private:v1", d), registry.StateUpToDate, "")
	})
}
