package store

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm/schema"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestFleetSecretsRegistered: every serializer:secret field of the fleet
// models is in the registry rotate-db-key walks.
func TestFleetSecretsRegistered(t *testing.T) {
	reg := map[string]bool{}
	for _, c := range EncryptedColumns() {
		reg[c.AAD()] = true
	}
	for _, m := range []any{&serverRow{}, &groupRow{}, &jobRow{}, &jobOutputRow{}} {
		sch, err := schema.Parse(m, &sync.Map{}, schema.NamingStrategy{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range sch.Fields {
			if f.TagSettings["SERIALIZER"] == "secret" && !reg[sch.Table+"."+f.DBName] {
				t.Errorf("%s.%s is encrypted but not registered", sch.Table, f.DBName)
			}
		}
	}
}

// TestFleetStore: encrypted name and host with a blind index, scoping,
// and console output stored encrypted exactly once — on SQLite and
// PostgreSQL.
func TestFleetStore(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			s, _ := openTest(t, db)
			ctx := context.Background()
			if _, err := s.SeedIdentity(ctx, func() (string, error) { return "x", nil }); err != nil {
				t.Fatal(err)
			}
			g, err := s.CreateGroup(ctx, domain.Group{Name: "g"})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: "Secret-Name", Host: "10.9.8.7", Port: 22,
				Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k", GroupIDs: []string{g.ID}},
				Secrets: ServerSecrets{PrivateKey: "PRIVATE-KEY-MATERIAL"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: " secret-name ", Host: "h", Port: 22, HostKey: "k"}}); !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("duplicate name (blind index): %v", err)
			}
			var raw struct {
				Name, Host, PrivateKey []byte
			}
			if err := s.db.Raw("SELECT name, host, private_key FROM servers WHERE id = ?", srv.ID).Row().Scan(&raw.Name, &raw.Host, &raw.PrivateKey); err != nil {
				t.Fatal(err)
			}
			for _, v := range [][]byte{raw.Name, raw.Host, raw.PrivateKey} {
				if bytes.Contains(v, []byte("Secret-Name")) || bytes.Contains(v, []byte("10.9.8.7")) || bytes.Contains(v, []byte("PRIVATE-KEY")) {
					t.Fatal("plaintext in the servers table")
				}
			}
			if l, _ := s.ListServers(ctx, SystemScope, ServerFilter{Q: "SECRET-NAME"}); len(l) != 1 || l[0].Host != "10.9.8.7" {
				t.Fatalf("blind-index search: %+v", l)
			}
			mgr, err := s.CreateUser(ctx, NewUser{Username: "m", Active: true, Roles: []string{domain.RoleManager}})
			if err != nil {
				t.Fatal(err)
			}
			sc := ScopeOf(&domain.Principal{UserID: mgr.ID, Roles: []string{domain.RoleManager}})
			if _, err := s.GetServer(ctx, sc, srv.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Fatal("a manager of no group sees the server")
			}
			if err := s.AddGroupManager(ctx, g.ID, mgr.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetServer(ctx, sc, srv.ID); err != nil {
				t.Fatalf("manager of the group: %v", err)
			}
			if _, err := s.GetServer(ctx, ScopeOf(nil), srv.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Fatal("nil principal sees a server")
			}

			if err := s.CreateJob(ctx, domain.Job{ID: "job-1", Kind: domain.JobUpgradeSecurity, ServerID: srv.ID, Segment: "default", Status: domain.JobPending}); err != nil {
				t.Fatal(err)
			}
			chunks := []ChunkIn{{JobID: "job-1", OutputChunk: domain.OutputChunk{Seq: 0, Offset: 0, Data: []byte("hello ")}},
				{JobID: "job-1", OutputChunk: domain.OutputChunk{Seq: 2, Offset: 11, Data: []byte("!")}}}
			for i := 0; i < 2; i++ { // redelivery: stored once
				if err := s.AppendOutput(ctx, chunks); err != nil {
					t.Fatal(err)
				}
			}
			o, err := s.ReadOutput(ctx, SystemScope, "job-1", 0, 1<<20)
			if err != nil || string(o.Output) != "hello " || o.Offset != 6 {
				t.Fatalf("read stops at the gap: %q %d %v", o.Output, o.Offset, err)
			}
			if err := s.AppendOutput(ctx, []ChunkIn{{JobID: "job-1", OutputChunk: domain.OutputChunk{Seq: 1, Offset: 6, Data: []byte("world")}}}); err != nil {
				t.Fatal(err)
			}
			o, _ = s.ReadOutput(ctx, SystemScope, "job-1", 3, 1<<20)
			if string(o.Output) != "lo world!" || o.Offset != 12 {
				t.Fatalf("read from offset 3: %q %d", o.Output, o.Offset)
			}
			var n int64
			s.db.Model(&jobOutputRow{}).Where("job_id = ?", "job-1").Count(&n)
			var blob []byte
			_ = s.db.Raw("SELECT data FROM job_output WHERE seq = 1").Row().Scan(&blob)
			if n != 3 || bytes.Contains(blob, []byte("world")) {
				t.Fatalf("%d rows, plaintext %v", n, bytes.Contains(blob, []byte("world")))
			}
			if _, err := s.ClaimJob(ctx, "job-1", srv.ID, "w1", o2t()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ClaimJob(ctx, "job-1", srv.ID, "w2", o2t()); err == nil {
				t.Fatal("a second worker claimed a started job")
			}
		})
	}
}

func o2t() time.Time { return time.Now().UTC() }
