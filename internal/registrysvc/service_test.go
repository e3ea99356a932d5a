package registrysvc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/registry"
	"github.com/lcmproject/lcm/internal/registrysvc"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

func ptr[T any](v T) *T { return &v }

// TestStoredCredentialsAgainstRealRegistry: a registry with Basic
// authentication is checked anonymously (unauthorized), then with stored
// credentials (up to date), the connection test says so both ways, and
// the answers never carry the password.
func TestStoredCredentialsAgainstRealRegistry(t *testing.T) {
	open := testutil.StartRegistry(t, testutil.RegistryOptions{})
	d := open.PushImage(t, "team/app", "v1", testutil.TestImage{Files: map[string]string{"v": "1"}}, "")
	reg := testutil.StartRegistry(t, testutil.RegistryOptions{RootDir: open.RootDir, Htpasswd: map[string]string{"ci": "Pass-Word-1"}})
	ctx := context.Background()
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			svc := registrysvc.New(storetest.Open(t, db.URL), registrysvc.Options{})
			refs := []registry.ImageRef{{Ref: reg.Host + "/team/app:v1", LocalDigests: []string{d}}}

			r, err := svc.Create(ctx, registrysvc.Input{Host: ptr(reg.Host), Username: ptr("ci"), Password: ptr("wrong"), PlainHTTP: ptr(true)})
			if err != nil || !r.HasPassword || r.Host != reg.Host {
				t.Fatalf("create: %+v %v", r, err)
			}
			if res, err := svc.Test(ctx, r.ID); err != nil || res.OK || res.Reason != string(registry.ReasonUnauthorized) {
				t.Fatalf("test with a wrong password: %+v %v", res, err)
			}
			if res := svc.Check(ctx, refs)[0]; res.Reason != registry.ReasonUnauthorized {
				t.Fatalf("check with a wrong password: %+v", res)
			}
			if r, err = svc.Update(ctx, r.ID, registrysvc.Input{Password: ptr("Pass-Word-1")}); err != nil || r.Username != "ci" {
				t.Fatalf("update: %+v %v", r, err)
			}
			if res, err := svc.Test(ctx, r.ID); err != nil || !res.OK {
				t.Fatalf("test: %+v %v", res, err)
			}
			if res := svc.Check(ctx, refs)[0]; res.State != registry.StateUpToDate {
				t.Fatalf("check: %+v", res)
			}
			if _, err := svc.Create(ctx, registrysvc.Input{Host: ptr(reg.Host)}); !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("duplicate: %v", err)
			}
			for _, in := range []registrysvc.Input{
				{Host: ptr("https://ghcr.io")}, {Host: ptr("ghcr.io/x")}, {Host: ptr("")}, {Host: ptr("a b")},
				{Host: ptr("ghcr.io"), Password: ptr("p")}, {Host: ptr("ghcr.io"), Username: ptr("a\x00b")},
			} {
				if _, err := svc.Create(ctx, in); !errors.Is(err, domain.ErrInvalid) {
					t.Errorf("%+v accepted: %v", in, err)
				}
			}
			// Docker Hub's names are one host.
			hub, err := svc.Create(ctx, registrysvc.Input{Host: ptr("docker.io"), Username: ptr("me"), Password: ptr("dckr_pat_x")})
			if err != nil || hub.Host != registry.DockerHubHost {
				t.Fatalf("docker hub: %+v %v", hub, err)
			}
			if ep, ok, err := svc.Endpoint(ctx, "index.docker.io"); err != nil || !ok || ep.Username != "me" {
				t.Fatalf("endpoint: %+v %v %v", ep, ok, err)
			}
			if _, err := svc.Delete(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			// Without stored settings the host is asked over HTTPS, which
			// this plain-HTTP registry does not speak.
			if res := svc.Check(ctx, refs)[0]; res.Reason != registry.ReasonUnreachable {
				t.Fatalf("after delete: %+v", res)
			}
			list, err := svc.List(ctx)
			if err != nil || len(list) != 1 {
				t.Fatalf("list: %+v %v", list, err)
			}
		})
	}
}

// TestPasswordSurvivesKeyRotation: the password column is in the
// rotation registry; after rotate-db-key the stored password still opens.
func TestPasswordSurvivesKeyRotation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.OpenIn(t, "", dir)
	svc := registrysvc.New(st, registrysvc.Options{})
	if _, err := svc.Create(ctx, registrysvc.Input{Host: ptr("ghcr.io"), Username: ptr("bot"), Password: ptr("ghp_rotate-me")}); err != nil {
		t.Fatal(err)
	}
	if stats, err := st.RotateMasterKey(ctx, dir); err != nil || stats.Fields < 1 {
		t.Fatalf("rotate: %+v %v", stats, err)
	}
	kr, _, err := st.ResolveMasterKey(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	st.SetKeyring(kr)
	ep, ok, err := svc.Endpoint(ctx, "ghcr.io")
	if err != nil || !ok || ep.Password != "ghp_rotate-me" {
		t.Fatalf("after rotation: %+v %v %v", ep, ok, err)
	}
}
