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
