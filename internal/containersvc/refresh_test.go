package containersvc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// fixedChecker answers every image as up to date with its own digest.
type fixedChecker struct{ calls int }

func (c *fixedChecker) Check(_ context.Context, refs []containers.ImageRef) ([]containers.ImageUpdate, error) {
	c.calls++
	out := make([]containers.ImageUpdate, len(refs))
	for i, r := range refs {
		out[i] = containers.ImageUpdate{Image: r.Image, LocalDigest: r.Digest, RemoteDigest: r.Digest, CheckedAt: time.Now()}
	}
	return out, nil
}

// TestRefreshPayloadStoresContainers: a regular refresh job's payload with
// a container inventory (a recorded docker + podman collection) is stored
// by the inventory ingest through the containers service, as a container
// refresh job's would be: the inventory, the job, the newer-image check;
// the last container action's outcome stays. A refresh that finds no
// engine empties a stored inventory and writes nothing for a server that
// never had one; a payload without containers (a package action) leaves
// the stored inventory alone.
func TestRefreshPayloadStoresContainers(t *testing.T) {
	raw, err := os.ReadFile("../containers/testdata/collect-docker-28.2.2-and-podman-4.3.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := containers.ParseCollect(raw)
	if err != nil || len(recorded.Containers) == 0 {
		t.Fatalf("recorded collection: %d containers, %v", len(recorded.Containers), err)
	}
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			svc := New(st, nil, nil)
			chk := &fixedChecker{}
			svc.SetUpdateChecker(chk)
			inv := inventory.New(st, inventory.Options{})
			inv.OnContainers(svc.IngestRefreshes)
			admin := &domain.Principal{UserID: "admin", Roles: []string{domain.RoleAdmin}}
			add := func(name string) string {
				srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: name, Host: "192.0.2.10", Port: 22,
					Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, Joined: true,
					HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:x"}})
				if err != nil {
					t.Fatal(err)
				}
				return srv.ID
			}
			withCtr, bare := add("with-containers"), add("bare")
			// The last container action, stored before the refresh.
			outcome, _ := json.Marshal(actions.ContainerOutcome{Op: actions.ContainerStop, Target: "web", OK: true, Message: "stopped"})
			if err := st.SetContainerInventory(ctx, store.ContainerInventory{ServerID: withCtr, Data: []byte(`{"engines":[]}`), RefreshedAt: time.Unix(0, 0), JobID: "old", Outcome: outcome}); err != nil {
				t.Fatal(err)
			}
			payload := func(c *containers.Inventory) []byte {
				b, err := actions.EncodeRefresh(actions.RefreshData{Facts: facts.Facts{Hostname: "h"}, Containers: c})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			at := time.Date(2026, 11, 24, 18, 10, 0, 0, time.UTC)
			empty := containers.Inventory{Engines: []containers.EngineInfo{}}
			jobs := []domain.Job{
				{ID: "refresh-1", Kind: domain.JobRefresh, ServerID: withCtr, FinishedAt: &at, Data: payload(&recorded)},
				{ID: "refresh-2", Kind: domain.JobRefresh, ServerID: bare, FinishedAt: &at, Data: payload(&empty)},
			}
			for i, err := range inv.IngestJobs(ctx, jobs) {
				if err != nil {
					t.Fatalf("job %d: %v", i, err)
				}
			}
			v, err := svc.Server(ctx, admin, withCtr)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Collected || v.JobID != "refresh-1" || !v.RefreshedAt.Equal(at) || len(v.Containers) != len(recorded.Containers) ||
				len(v.Images) != len(recorded.Images) || len(v.Engines) != 2 {
				t.Fatalf("stored view: collected %v job %s at %v, %d containers, %d images, %d engines", v.Collected, v.JobID, v.RefreshedAt, len(v.Containers), len(v.Images), len(v.Engines))
			}
			if v.LastAction == nil || v.LastAction.Op != actions.ContainerStop {
				t.Fatalf("last action lost: %+v", v.LastAction)
			}
			if chk.calls != 1 || v.UpdatesCheckedAt == nil || v.Containers[0].Update != containers.UpdateUpToDate {
				t.Fatalf("newer-image check: %d calls, checked at %v, update %q", chk.calls, v.UpdatesCheckedAt, v.Containers[0].Update)
			}
			if _, err := st.GetContainerInventory(ctx, bare); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("server without engine got an inventory row: %v", err)
			}

			// A package action's payload carries no containers: nothing changes.
			pkg := []domain.Job{{ID: "pkg-1", Kind: domain.JobPackageAction, ServerID: withCtr, FinishedAt: &at, Data: payload(nil)}}
			if err := inv.IngestJobs(ctx, pkg)[0]; err != nil {
				t.Fatal(err)
			}
			if v, _ = svc.Server(ctx, admin, withCtr); v.JobID != "refresh-1" || len(v.Containers) != len(recorded.Containers) {
				t.Fatalf("package action changed the containers: job %s, %d containers", v.JobID, len(v.Containers))
			}

			// The engines were removed: the next refresh empties the inventory.
			gone := []domain.Job{{ID: "refresh-3", Kind: domain.JobRefresh, ServerID: withCtr, FinishedAt: &at, Data: payload(&empty)}}
			if err := inv.IngestJobs(ctx, gone)[0]; err != nil {
				t.Fatal(err)
			}
			if v, _ = svc.Server(ctx, admin, withCtr); v.JobID != "refresh-3" || len(v.Containers) != 0 || len(v.Engines) != 0 {
				t.Fatalf("after the engines were removed: job %s, %d containers, %d engines", v.JobID, len(v.Containers), len(v.Engines))
			}
		})
	}
}

// TestRefreshKeepsContainerPackages: the packages a container refresh
// read from a CVE-relevant container survive a regular refresh (which
// does not read them) while the container runs the same image, and are
// dropped once it runs another.
func TestRefreshKeepsContainerPackages(t *testing.T) {
	raw, err := os.ReadFile("../containers/testdata/collect-docker-28.2.2-and-podman-4.3.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := containers.ParseCollect(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := storetest.Open(t, "")
	svc := New(st, nil, nil)
	srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "s", Host: "192.0.2.10", Port: 22,
		Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, Joined: true,
		HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:x"}})
	if err != nil {
		t.Fatal(err)
	}
	ct := inv.Containers[0]
	withPkgs := inv
	withPkgs.CVEPackages = []containers.ImagePackages{{Engine: ct.Engine, Container: ct.Name, ImageID: ct.ImageID, OSID: "debian", OSVersion: "12",
		Packages: []containers.Package{{Name: "libssl3", Version: "3.0.15-1~deb12u1", Arch: "amd64", Source: "openssl"}}}}
	stored := func() containers.Inventory {
		t.Helper()
		got, _, err := svc.stored(ctx, srv.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := svc.storeInventory(ctx, containers.Collected{ServerID: srv.ID, JobID: "ctr", At: time.Now(), Inventory: withPkgs}, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if errs := svc.IngestRefreshes(ctx, []containers.Collected{{ServerID: srv.ID, JobID: "refresh", At: time.Now(), Inventory: inv}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got := stored(); len(got.CVEPackages) != 1 || got.CVEPackages[0].Packages[0].Name != "libssl3" {
		t.Fatalf("after a refresh: %+v", got.CVEPackages)
	}
	moved := inv
	moved.Containers = append([]containers.Container(nil), inv.Containers...)
	moved.Containers[0].ImageID = "another-image"
	if errs := svc.IngestRefreshes(ctx, []containers.Collected{{ServerID: srv.ID, JobID: "refresh-2", At: time.Now(), Inventory: moved}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got := stored(); len(got.CVEPackages) != 0 {
		t.Fatalf("packages of the old image kept: %+v", got.CVEPackages)
	}
}
