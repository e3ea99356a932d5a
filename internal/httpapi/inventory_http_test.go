package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// inventoryHarness is the identity harness with the inventory service
// wired, two servers in two groups and a manager of the first group.
func inventoryHarness(t *testing.T, dbURL ...string) (h *harness, admin, mgr, mine, other string) {
	t.Helper()
	ctx := context.Background()
	h = newHarness(t, harnessOpts{no2FA: true, dbURL: strings.Join(dbURL, "")})
	inv := inventory.New(h.st, inventory.Options{Log: quietLog})
	h.srv = New(Deps{Store: h.st, Bus: h.bus, Dev: true, Log: quietLog,
		ClientAddr: func(r *http.Request) netip.Addr {
			return h.svc.ClientAddr(r.Context(), r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		},
		Allowed:  func(ip netip.Addr) bool { return h.svc.Allowed(context.Background(), ip) },
		Services: Services{Auth: h.svc, Inventory: inv}})
	admin = h.login("admin", adminPW)
	mgrID := h.createUser(admin, "invmgr", adminPW, domain.RoleManager)
	mgr = h.login("invmgr", adminPW)
	ids := make([]string, 2)
	for i, name := range []string{"inv-mine", "inv-other"} {
		srv, err := h.st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: name, Host: "192.0.2.10", Port: 22,
			Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, Joined: true,
			HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:x"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = srv.ID
		f := facts.Facts{Hostname: name, Kernel: "6.1.0-18-amd64", PackageManager: "apt",
			Filesystems: []facts.Filesystem{{MountPoint: "/", SizeBytes: 100, UsedBytes: 40, AvailBytes: 60},
				{MountPoint: "/data", Device: "/dev/vdb1", Type: "ext4", SizeBytes: 200, UsedBytes: 50, AvailBytes: 150},
				{MountPoint: "/mnt/share", Device: "nas:/share", Type: "nfs4", SizeBytes: 1000, UsedBytes: 10, AvailBytes: 990, Network: true}}}
		pk := pkgmgr.Inventory{Manager: "apt", Packages: []pkgmgr.Package{{Name: "openssl", Version: "3.0." + name, Arch: "amd64"},
			{Name: "bash", Version: "5.2", Arch: "amd64"}},
			Upgradable: []pkgmgr.Upgradable{{Name: "openssl", Arch: "amd64", Current: "3.0." + name, Candidate: "3.0.99", Security: true}}}
		if err := inv.Ingest(ctx, srv.ID, f, pk); err != nil {
			t.Fatal(err)
		}
	}
	g, err := h.st.CreateGroup(ctx, domain.Group{Name: "inv-group"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.AddGroupServer(ctx, g.ID, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AddGroupManager(ctx, g.ID, mgrID); err != nil {
		t.Fatal(err)
	}
	return h, admin, mgr, ids[0], ids[1]
}

// TestBadTextIsAClientError: a NUL byte or invalid UTF-8 in an id or a
// query is refused with a 4xx on both databases (PostgreSQL rejects such
// text with a data exception, which must not surface as a 500).
func TestBadTextIsAClientError(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			h, admin, _, mine, _ := inventoryHarness(t, db.URL)
			for _, path := range []string{
				"/api/v1/servers/%00/packages",
				"/api/v1/servers/%00/hardware",
				"/api/v1/servers/a%00b/storage-history",
				"/api/v1/servers/%ff%fe/outdated-packages",
				"/api/v1/servers/" + mine + "/storage-history?mount=/%00",
				"/api/v1/servers/" + mine + "/storage-history?mount=/%ff",
				"/api/v1/packages/overview?name=a%00b",
				"/api/v1/packages/overview?name=%ff",
				"/api/v1/packages/overview?prefix=%00",
			} {
				r := h.do(req{method: "GET", path: path, token: admin})
				if r.code != 400 && r.code != 404 && r.code != 200 {
					t.Errorf("GET %s: %d %s, want a 4xx (or an empty 200)", path, r.code, r.body)
				}
				if r.code >= 400 && !strings.Contains(string(r.body), `"error"`) {
					t.Errorf("GET %s: %d without an error body: %s", path, r.code, r.body)
				}
			}
			r := h.do(req{method: "PUT", path: "/api/v1/servers/%00/storage-volumes", token: admin, body: map[string]any{"mounts": []string{"/data"}}})
			if r.code != 400 && r.code != 404 {
				t.Errorf("PUT volumes of a NUL id: %d %s", r.code, r.body)
			}
		})
	}
}

func TestInventoryRoutes(t *testing.T) {
	h, admin, mgr, mine, other := inventoryHarness(t)
	for _, c := range []struct {
		name, token, path string
		want              int
	}{
		{"admin hardware", admin, "/api/v1/servers/" + other + "/hardware", 200},
		{"manager own hardware", mgr, "/api/v1/servers/" + mine + "/hardware", 200},
		{"manager other hardware", mgr, "/api/v1/servers/" + other + "/hardware", 404},
		{"manager other packages", mgr, "/api/v1/servers/" + other + "/packages", 404},
		{"manager other outdated", mgr, "/api/v1/servers/" + other + "/outdated-packages", 404},
		{"manager other storage", mgr, "/api/v1/servers/" + other + "/storage-history", 404},
		{"unknown server", admin, "/api/v1/servers/nope/packages", 404},
		{"bad days", admin, "/api/v1/servers/" + mine + "/storage-history?days=x", 400},
		{"too many days", admin, "/api/v1/servers/" + mine + "/storage-history?days=999", 400},
		{"bad limit", admin, "/api/v1/packages/overview?limit=5000", 400},
		{"manager other volumes", mgr, "/api/v1/servers/" + other + "/storage-volumes", 404},
		{"anonymous", "", "/api/v1/packages/overview", 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := h.do(req{method: "GET", path: c.path, token: c.token}); r.code != c.want {
				t.Fatalf("GET %s: %d %s, want %d", c.path, r.code, r.body, c.want)
			}
		})
	}

	t.Run("reads", func(t *testing.T) {
		var hw hardwareDTO
		h.do(req{method: "GET", path: "/api/v1/servers/" + mine + "/hardware", token: mgr}).json(t, &hw)
		if hw.Facts.Hostname != "inv-mine" || hw.Packages != 2 || hw.SecurityUpdates != 1 {
			t.Fatalf("hardware %+v", hw)
		}
		var pk []pkgmgr.Package
		h.do(req{method: "GET", path: "/api/v1/servers/" + mine + "/packages", token: mgr}).json(t, &pk)
		if len(pk) != 2 || pk[0].Name != "bash" {
			t.Fatalf("packages %+v", pk)
		}
		var up []pkgmgr.Upgradable
		h.do(req{method: "GET", path: "/api/v1/servers/" + mine + "/outdated-packages", token: mgr}).json(t, &up)
		if len(up) != 1 || !up[0].Security || up[0].Candidate != "3.0.99" {
			t.Fatalf("outdated %+v", up)
		}
		var sh inventory.StorageHistory
		h.do(req{method: "GET", path: "/api/v1/servers/" + mine + "/storage-history", token: mgr}).json(t, &sh)
		if sh.Mount != "/" || len(sh.Samples) != 1 || sh.Samples[0].UsedBytes != 40 {
			t.Fatalf("storage %+v", sh)
		}
	})

	t.Run("overview scoped", func(t *testing.T) {
		var all, scoped packageOverviewPageDTO
		h.do(req{method: "GET", path: "/api/v1/packages/overview", token: admin}).json(t, &all)
		h.do(req{method: "GET", path: "/api/v1/packages/overview?name=openssl", token: mgr}).json(t, &scoped)
		if all.Total != 2 || len(all.Items) != 2 || all.Items[1].Name != "openssl" || len(all.Items[1].Versions) != 2 {
			t.Fatalf("admin overview %+v", all)
		}
		if scoped.Total != 1 || len(scoped.Items[0].Versions) != 1 || scoped.Items[0].Versions[0].ServerIDs[0] != mine {
			t.Fatalf("manager overview %+v", scoped)
		}
	})
}

// TestStorageVolumesRoutes: opt-in monitoring of volumes besides "/":
// listed from the last refresh, validated, scoped, and sampled from the
// next ingest on.
func TestStorageVolumesRoutes(t *testing.T) {
	h, admin, mgr, mine, other := inventoryHarness(t)
	path := "/api/v1/servers/" + mine + "/storage-volumes"
	var v inventory.Volumes
	h.do(req{method: "GET", path: path, token: mgr}).json(t, &v)
	if len(v.Monitored) != 1 || v.Monitored[0] != "/" || len(v.Mounts) != 3 || !v.Mounts[0].Monitored || v.Mounts[1].Monitored || !v.Mounts[2].Network {
		t.Fatalf("volumes before: %+v", v)
	}
	for _, c := range []struct{ name, token, path, body, code string }{
		{"network filesystem", mgr, path, `{"mounts":["/mnt/share"]}`, "network_volume"},
		{"relative path", mgr, path, `{"mounts":["data"]}`, "invalid_mount"},
		{"unclean path", mgr, path, `{"mounts":["/data/"]}`, "invalid_mount"},
		{"dot dot", mgr, path, `{"mounts":["/data/../etc"]}`, "invalid_mount"},
		{"control character", mgr, path, `{"mounts":["/da\u0007ta"]}`, "invalid_mount"},
		{"missing list", mgr, path, `{}`, "invalid_mounts"},
		{"unknown field", mgr, path, `{"mounts":[],"x":1}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(req{method: "PUT", path: c.path, token: c.token, body: c.body})
			if r.code != 400 || (c.code != "" && !strings.Contains(string(r.body), `"code":"`+c.code+`"`)) {
				t.Fatalf("PUT %s: %d %s, want 400 %s", c.body, r.code, r.body, c.code)
			}
		})
	}
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("/vol%d", i)
	}
	body, _ := json.Marshal(map[string]any{"mounts": many})
	if r := h.do(req{method: "PUT", path: path, token: admin, body: string(body)}); r.code != 400 || !strings.Contains(string(r.body), "too_many_volumes") {
		t.Fatalf("40 mounts: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "PUT", path: "/api/v1/servers/" + other + "/storage-volumes", token: mgr, body: `{"mounts":["/data"]}`}); r.code != 404 {
		t.Fatalf("manager sets another group's server: %d %s", r.code, r.body)
	}
	h.do(req{method: "PUT", path: path, token: mgr, body: `{"mounts":["/", "/data", "/data", "/srv"]}`}).json(t, &v)
	if strings.Join(v.Monitored, ",") != "/,/data,/srv" || !v.Mounts[1].Monitored {
		t.Fatalf("volumes after: %+v", v)
	}
	// The next refresh samples /data; the never-mounted /srv has no history.
	inv := inventory.New(h.st, inventory.Options{Log: quietLog})
	f := facts.Facts{Filesystems: []facts.Filesystem{{MountPoint: "/", SizeBytes: 100, UsedBytes: 41, AvailBytes: 59},
		{MountPoint: "/data", SizeBytes: 200, UsedBytes: 60, AvailBytes: 140}}}
	if err := inv.Ingest(context.Background(), mine, f, pkgmgr.Inventory{Manager: "apt"}); err != nil {
		t.Fatal(err)
	}
	var sh inventory.StorageHistory
	h.do(req{method: "GET", path: "/api/v1/servers/" + mine + "/storage-history?mount=/data", token: mgr}).json(t, &sh)
	if sh.Mount != "/data" || len(sh.Samples) != 1 || sh.Samples[0].UsedBytes != 60 {
		t.Fatalf("/data history: %+v", sh)
	}
	h.do(req{method: "PUT", path: path, token: mgr, body: `{"mounts":[]}`}).json(t, &v)
	if len(v.Monitored) != 1 {
		t.Fatalf("cleared: %+v", v)
	}
}
