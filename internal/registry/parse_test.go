package registry

import (
	"reflect"
	"strings"
	"testing"
)

const dg = "sha256:2d05c9fdd5a4a5d9c4b1f7b7b1a6d2f36c87fd0d1a7c1c2c7a1b5d1e6f9a0b1c"

func TestParseReference(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Reference
	}{
		{"nginx", Reference{Host: DockerHubHost, Repository: "library/nginx", Tag: "latest"}},
		{"nginx:1.25", Reference{Host: DockerHubHost, Repository: "library/nginx", Tag: "1.25"}},
		{"docker.io/library/nginx:1.25", Reference{Host: DockerHubHost, Repository: "library/nginx", Tag: "1.25"}},
		{"index.docker.io/grafana/grafana", Reference{Host: DockerHubHost, Repository: "grafana/grafana", Tag: "latest"}},
		{"grafana/grafana:10.2.0", Reference{Host: DockerHubHost, Repository: "grafana/grafana", Tag: "10.2.0"}},
		{"ghcr.io/x/y:tag", Reference{Host: "ghcr.io", Repository: "x/y", Tag: "tag"}},
		{"localhost/app", Reference{Host: "localhost", Repository: "app", Tag: "latest"}},
		{"127.0.0.1:5000/team/app:v1", Reference{Host: "127.0.0.1:5000", Repository: "team/app", Tag: "v1"}},
		{"127.0.0.1:5000/team/app", Reference{Host: "127.0.0.1:5000", Repository: "team/app", Tag: "latest"}},
		{"quay.io/a/b@" + dg, Reference{Host: "quay.io", Repository: "a/b", Digest: dg}},
		{"nginx:1.25@" + dg, Reference{Host: DockerHubHost, Repository: "library/nginx", Tag: "1.25", Digest: dg}},
		{"[::1]:5000/a:v", Reference{Host: "[::1]:5000", Repository: "a", Tag: "v"}},
	} {
		got, err := ParseReference(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "UPPER/case", "a b", "nginx:", "nginx@sha256:short", "ghcr.io/", "a//b", ":tag", "nginx:" + strings.Repeat("t", 129), "-a/b", "host:99999999/a", dg, dg[len("sha256:"):], "<none>:<none>"} {
		if r, err := ParseReference(bad); err == nil {
			t.Errorf("%q parsed as %+v", bad, r)
		}
	}
}

func TestParseChallenges(t *testing.T) {
	got := ParseChallenges([]string{
		`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"`,
		`Basic realm="Registry Realm", Negotiate abc==, Bearer realm="https://ghcr.io/token", service=ghcr.io, scope="repository:x/y:pull", error="insufficient_scope"`,
		`Bearer realm="a\"b"`,
	})
	want := []Challenge{
		{Scheme: "bearer", Params: map[string]string{"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:library/nginx:pull"}},
		{Scheme: "basic", Params: map[string]string{"realm": "Registry Realm"}},
		{Scheme: "negotiate", Params: map[string]string{}},
		{Scheme: "bearer", Params: map[string]string{"realm": "https://ghcr.io/token", "service": "ghcr.io", "scope": "repository:x/y:pull", "error": "insufficient_scope"}},
		{Scheme: "bearer", Params: map[string]string{"realm": `a"b`}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if got := ParseChallenges([]string{`Bearer realm="unterminated`}); len(got) != 1 || got[0].Params["realm"] != "" {
		t.Fatalf("unterminated: %+v", got)
	}
}

func FuzzParseReference(f *testing.F) {
	for _, s := range []string{"nginx", "nginx:1.25", "ghcr.io/x/y:tag", "127.0.0.1:5000/a@" + dg, "docker.io/library/nginx:1@" + dg, "[::1]:5/a", "a//b", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReference(s)
		if err != nil {
			return
		}
		if r.Host == "" || r.Repository == "" || (r.Tag == "" && r.Digest == "") {
			t.Fatalf("%q: incomplete %+v", s, r)
		}
		// The normalised form parses to itself.
		again, err := ParseReference(r.String())
		if err != nil || again != r {
			t.Fatalf("%q → %q → %+v %v, want %+v", s, r.String(), again, err, r)
		}
	})
}

func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"`,
		`Basic realm="x", Negotiate abc==`, `Bearer realm="a\"b"`, `a=b`, `,,, Bearer`, `Bearer realm=`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range ParseChallenges([]string{s}) {
			if c.Scheme == "" || c.Scheme != strings.ToLower(c.Scheme) || c.Params == nil {
				t.Fatalf("%q: bad challenge %+v", s, c)
			}
			for k := range c.Params {
				if k == "" || k != strings.ToLower(k) {
					t.Fatalf("%q: bad parameter name %q", s, k)
				}
			}
		}
	})
}
