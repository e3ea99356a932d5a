package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

func addServer(t *testing.T, st *store.Store, name string, groups ...string) domain.Server {
	t.Helper()
	srv, err := st.CreateServer(context.Background(), store.NewServer{
		Server: domain.Server{Name: name, Host: "192.0.2.1", Port: 22, Transport: domain.TransportSSH, Status: domain.ServerGreen,
			Joined: true, AuthMethod: domain.AuthKey, HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:secretfp-" + name,
			PackageFamily: "apt", GroupIDs: groups},
		Secrets: store.ServerSecrets{Username: domain.ManagementUser, PrivateKey: "PRIVATE-" + name},
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestServiceScopeAndFilters: a manager sees the servers of its groups
// only, in every tool; the cache follows changes; filters and paging
// behave; on SQLite and PostgreSQL.
func TestServiceScopeAndFilters(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			if _, err := st.SeedIdentity(ctx, func() (string, error) { return "$argon2id$unused", nil }); err != nil {
				t.Fatal(err)
			}
			g, err := st.CreateGroup(ctx, domain.Group{Name: "web"})
			if err != nil {
				t.Fatal(err)
			}
			web := addServer(t, st, "web-01", g.ID)
			db1 := addServer(t, st, "db-01")
			if err := st.SetFindings(ctx, db1.ID, []store.Finding{{CVE: "CVE-2024-6387", Package: "openssh-server", Version: "1", FixedIn: "2", Severity: "critical"}}); err != nil {
				t.Fatal(err)
			}
			u, err := st.CreateUser(ctx, store.NewUser{Username: "mona", Active: true, Roles: []string{domain.RoleManager}})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.AddGroupManager(ctx, g.ID, u.ID); err != nil {
				t.Fatal(err)
			}
			admin := &domain.Principal{UserID: "admin", Roles: []string{domain.RoleAdmin}}
			mgr := &domain.Principal{UserID: u.ID, Roles: []string{domain.RoleManager}}
			svc := NewService(st)

			all, err := svc.ListServers(ctx, admin, ListFilter{})
			if err != nil || all.Total != 2 || all.Servers[0].Name != "db-01" {
				t.Fatalf("admin list: %+v %v", all, err)
			}
			mine, err := svc.ListServers(ctx, mgr, ListFilter{})
			if err != nil || mine.Total != 1 || mine.Servers[0].ID != web.ID {
				t.Fatalf("manager list: %+v %v", mine, err)
			}
			if _, err := svc.GetServer(ctx, mgr, db1.ID, ""); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("manager reads a foreign server: %v", err)
			}
			if v, _ := svc.ListVulnerabilities(ctx, mgr, VulnFilter{}); v.Total != 0 {
				t.Fatalf("manager sees foreign findings: %+v", v)
			}
			if v, _ := svc.ListVulnerabilities(ctx, admin, VulnFilter{Severity: "critical"}); v.Total != 1 || v.Findings[0].ServerName != "db-01" {
				t.Fatalf("admin findings: %+v", v)
			}
			if s, _ := svc.FleetSummary(ctx, mgr); s.Total != 1 || s.ServersWithCriticalCVE != 0 {
				t.Fatalf("manager summary: %+v", s)
			}
			if s, _ := svc.FleetSummary(ctx, admin); s.Total != 2 || s.ServersWithCriticalCVE != 1 {
				t.Fatalf("admin summary: %+v", s)
			}
			// The cache follows a new server and a removed group link.
			addServer(t, st, "app-01", g.ID)
			if mine, _ = svc.ListServers(ctx, mgr, ListFilter{}); mine.Total != 2 {
				t.Fatalf("manager after a new server: %d", mine.Total)
			}
			if p, _ := svc.ListServers(ctx, admin, ListFilter{Search: "APP"}); p.Total != 1 {
				t.Fatalf("search APP: %+v", p)
			}
			if p, _ := svc.ListServers(ctx, admin, ListFilter{CriticalCVEOnly: true}); p.Total != 1 || p.Servers[0].Name != "db-01" {
				t.Fatalf("critical only: %+v", p)
			}
			if p, _ := svc.ListServers(ctx, admin, ListFilter{GroupID: g.ID, Limit: 1}); p.Total != 2 || len(p.Servers) != 1 || p.NextOffset == nil || *p.NextOffset != 1 {
				t.Fatalf("group page: %+v", p)
			}
			for _, bad := range []ListFilter{{Limit: 201}, {Limit: -1}, {Offset: -1}, {Status: "purple"}} {
				if _, err := svc.ListServers(ctx, admin, bad); !errors.Is(err, domain.ErrInvalid) {
					t.Errorf("%+v: %v, want invalid", bad, err)
				}
			}
			if err := st.DeleteServer(ctx, web.ID); err != nil {
				t.Fatal(err)
			}
			if mine, _ = svc.ListServers(ctx, mgr, ListFilter{}); mine.Total != 1 {
				t.Fatalf("manager after a delete: %d", mine.Total)
			}
		})
	}
}

func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// TestListenerFollowsAcrossReplicas: two replicas (two stores on one
// database, as two lcm-api processes have) each run a listener; a switch
// made through one binds and unbinds the other's port too.
func TestListenerFollowsAcrossReplicas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := testutil.PostgresURL(t)
	dir := t.TempDir() // one master key, as replicas share it
	st1 := storetest.OpenIn(t, url, dir)
	st2 := storetest.OpenIn(t, url, dir)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p1, p2 := testutil.FreePort(t), testutil.FreePort(t)
	l1 := NewListener(st1, "127.0.0.1", p1, NewHandler(NewService(st1), nil, log), log)
	l2 := NewListener(st2, "127.0.0.1", p2, NewHandler(NewService(st2), nil, log), log)
	go l1.Follow(ctx)
	go l2.Follow(ctx)
	a2 := fmt.Sprintf("127.0.0.1:%d", p2)
	if !refused(a2) {
		t.Fatal("replica 2 listens while off")
	}
	_, st, err := l1.Set(ctx, true)
	if err != nil || !st.Listening {
		t.Fatalf("enable on replica 1: %+v %v", st, err)
	}
	testutil.WaitFor(t, 3*FollowInterval, "replica 2 binds", func() bool { return !refused(a2) })
	if _, _, err := l1.Set(ctx, false); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 3*FollowInterval, "replica 2 unbinds", func() bool { return refused(a2) })
	if !refused(fmt.Sprintf("127.0.0.1:%d", p1)) {
		t.Fatal("replica 1 still listens")
	}
}

// TestViewHardeningAndReachability: the view carries the proven hardening
// (SSH, root login, sudo mode, firewall) and its index, and reachability
// follows the status model: fleet_summary's unreachable equals the
// servers the status model (and so REST's by_status) calls unreachable.
// The warm cache follows each change. SQLite and PostgreSQL.
func TestViewHardeningAndReachability(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			admin := &domain.Principal{UserID: "admin", Roles: []string{domain.RoleAdmin}}
			svc := NewService(st)
			stat := status.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
			ok, blip, down, never := addServer(t, st, "a-ok"), addServer(t, st, "b-blip"), addServer(t, st, "c-down"), addServer(t, st, "d-never")
			get := func(s domain.Server) ServerView {
				t.Helper()
				v, err := svc.GetServer(ctx, admin, s.ID, "")
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			if v := get(ok); v.HardeningIndex != nil || v.FirewallActive || v.FirewallTool != "" || v.Reachable {
				t.Fatalf("fresh server: %+v", v)
			}
			now := time.Now().UTC()
			for _, s := range []domain.Server{ok, blip, down} {
				if err := st.RecordContact(ctx, s.ID, true, "", now); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []struct {
				s domain.Server
				n int
			}{{blip, 1}, {down, 2}} {
				for i := 0; i < c.n; i++ {
					if err := st.RecordContact(ctx, c.s.ID, false, "dial tcp: connection refused", now); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := stat.RecomputeMany(ctx, []string{ok.ID, blip.ID, down.ID, never.ID}); err != nil {
				t.Fatal(err)
			}
			sum, err := svc.FleetSummary(ctx, admin)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Reachable != 2 || sum.Unreachable != 1 || sum.NotContacted != 1 || sum.ByStatus["unreachable"] != sum.Unreachable {
				t.Fatalf("summary %+v", sum)
			}
			rest, err := st.ListServers(ctx, store.SystemScope, store.ServerFilter{Status: "unreachable"})
			if err != nil || len(rest) != 1 || rest[0].ID != down.ID {
				t.Fatalf("REST's unreachable servers: %+v %v", rest, err)
			}
			if v := get(blip); !v.Reachable || v.Status != "yellow" {
				t.Fatalf("one failed contact: reachable %v status %s", v.Reachable, v.Status)
			}
			if v := get(down); v.Reachable || v.Status != "unreachable" {
				t.Fatalf("two failed contacts: reachable %v status %s", v.Reachable, v.Status)
			}
			if p, _ := svc.ListServers(ctx, admin, ListFilter{Status: "unreachable"}); p.Total != 1 || p.Servers[0].ID != down.ID {
				t.Fatalf("list unreachable: %+v", p)
			}

			// Hardening, each proven step read back into the warm cache.
			if err := st.RecordFirewall(ctx, ok.ID, "ufw", true, nil, now); err != nil {
				t.Fatal(err)
			}
			if v := get(ok); !v.FirewallActive || v.FirewallTool != "ufw" || v.HardeningIndex == nil || *v.HardeningIndex != 25 {
				t.Fatalf("after the firewall: %+v", v)
			}
			yes := true
			if err := st.RecordSSHProof(ctx, ok.ID, store.SSHProof{Hardened: &yes, RootLogin: "prohibit-password", At: now}); err != nil {
				t.Fatal(err)
			}
			if v := get(ok); !v.SSHHardened || v.RootLogin != "prohibit-password" || *v.HardeningIndex != 75 {
				t.Fatalf("after SSH hardening: %+v", v)
			}
			if err := st.RecordSudoMode(ctx, ok.ID, domain.SudoRestricted, now); err != nil {
				t.Fatal(err)
			}
			if v := get(ok); !v.SudoRestricted || *v.HardeningIndex != 100 {
				t.Fatalf("after restricted sudo: %+v", v)
			}
			if err := st.RecordFirewall(ctx, ok.ID, "nftables", false, nil, now); err != nil {
				t.Fatal(err)
			}
			if v := get(ok); v.FirewallActive || v.FirewallTool != "nftables" || *v.HardeningIndex != 75 {
				t.Fatalf("after the firewall went off: %+v", v)
			}
			// A scan's findings reach the warm cache (server_findings is
			// tracked), even when the status colour does not change.
			if err := st.SetFindings(ctx, down.ID, []store.Finding{{CVE: "CVE-2024-1", Package: "p", Version: "1", FixedIn: "2", Severity: "high"}}); err != nil {
				t.Fatal(err)
			}
			if v := get(down); v.CVEHigh != 1 || v.Status != "unreachable" {
				t.Fatalf("after a high finding: %+v", v)
			}
			// A root login by password is proven but scores nothing.
			if err := st.RecordSSHProof(ctx, blip.ID, store.SSHProof{RootLogin: "yes", At: now}); err != nil {
				t.Fatal(err)
			}
			if v := get(blip); v.HardeningIndex == nil || *v.HardeningIndex != 0 || v.RootLogin != "yes" {
				t.Fatalf("root login yes: %+v", v)
			}
		})
	}
}

func TestHardeningIndex(t *testing.T) {
	at := time.Now()
	cases := []struct {
		name string
		ssh  bool
		h    domain.Hardening
		want int // -1: nil
	}{
		{"nothing known", false, domain.Hardening{SudoMode: domain.SudoFull}, -1},
		{"firewall read back off", false, domain.Hardening{FirewallAt: &at, FirewallTool: "ufw"}, 0},
		{"firewall on", false, domain.Hardening{FirewallAt: &at, FirewallActive: true}, 25},
		{"firewall on, never read back", false, domain.Hardening{FirewallActive: true, SSHHardenedAt: &at}, 0},
		{"ssh hardened", true, domain.Hardening{SSHHardenedAt: &at}, 25},
		{"root no", false, domain.Hardening{RootLogin: "no", RootLoginAt: &at}, 25},
		{"root forced commands", false, domain.Hardening{RootLogin: "forced-commands-only", RootLoginAt: &at}, 25},
		{"root yes", false, domain.Hardening{RootLogin: "yes", RootLoginAt: &at}, 0},
		{"restricted sudo", false, domain.Hardening{SudoMode: domain.SudoRestricted, SudoModeAt: &at}, 25},
		{"full sudo proven", false, domain.Hardening{SudoMode: domain.SudoFull, SudoModeAt: &at}, 0},
		{"all four", true, domain.Hardening{SSHHardenedAt: &at, RootLogin: "prohibit-password", RootLoginAt: &at,
			SudoMode: domain.SudoRestricted, SudoModeAt: &at, FirewallActive: true, FirewallAt: &at}, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := HardeningIndex(c.ssh, c.h)
			if (got == nil) != (c.want < 0) || (got != nil && *got != c.want) {
				t.Fatalf("got %v, want %d", got, c.want)
			}
		})
	}
}
