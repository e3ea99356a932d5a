package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestFleetChanges: every committed write the server list shows is
// recorded after its commit — as a change of the servers it touched when
// the write says so for certain, else as a change of everything — through
// model writes and raw SQL alike; rolled-back transactions and other
// tables record nothing. On SQLite and PostgreSQL.
func TestFleetChanges(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			s, _ := openTest(t, db)
			ctx := context.Background()
			var mu sync.Mutex
			var announced []FleetChange
			s.OnFleetChange(func(ch FleetChange) { mu.Lock(); announced = append(announced, ch); mu.Unlock() })
			// expect runs fn and checks what was recorded: all, or exactly
			// these servers (nil: nothing).
			expect := func(t *testing.T, what string, all bool, ids []string, fn func() error) {
				t.Helper()
				before := s.FleetVersion()
				mu.Lock()
				announced = nil
				mu.Unlock()
				if err := fn(); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				cur, changed, ok := s.FleetChangesSince(before)
				switch {
				case all:
					if ok || cur.Gen == before.Gen {
						t.Errorf("%s: want a change of every server, got %v (ok %v)", what, changed, ok)
					}
				case !ok:
					t.Errorf("%s: recorded as a change of every server, want %v", what, ids)
				default:
					slices.Sort(changed)
					if !slices.Equal(changed, ids) {
						t.Errorf("%s: changed %v, want %v", what, changed, ids)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				local := !strings.HasPrefix(what, "not local: ")
				if local && (all || len(ids) > 0) != (len(announced) > 0) || !local && len(announced) > 0 {
					t.Errorf("%s: announced %v", what, announced)
				}
			}
			var srv domain.Server
			var id string
			func() {
				before := s.FleetVersion()
				err := s.InTx(ctx, func(tx *Store) error {
					var err error
					srv, err = tx.CreateServer(ctx, NewServer{Server: domain.Server{Name: "gen-1", Host: "10.0.0.1", Port: 22,
						Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k"}})
					if err == nil && s.FleetVersion() != before {
						return errors.New("recorded before the commit")
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				id = srv.ID
				if _, changed, ok := s.FleetChangesSince(before); !ok || !slices.Equal(changed, []string{id}) {
					t.Fatalf("create: %v %v", changed, ok)
				}
			}()
			ids := []string{id}
			expect(t, "rolled-back transaction", false, nil, func() error {
				_ = s.InTx(ctx, func(tx *Store) error {
					if _, err := tx.CreateServer(ctx, NewServer{Server: domain.Server{Name: "gen-rollback", Host: "h", Port: 22, HostKey: "k"}}); err != nil {
						return err
					}
					return errors.New("roll back")
				})
				return nil
			})
			expect(t, "panicking transaction", false, nil, func() error {
				defer func() { _ = recover() }()
				return s.InTx(ctx, func(tx *Store) error {
					if _, err := tx.CreateServer(ctx, NewServer{Server: domain.Server{Name: "gen-panic", Host: "h", Port: 22, HostKey: "k"}}); err != nil {
						return err
					}
					panic("boom")
				})
			})
			name := "gen-renamed"
			expect(t, "update settings", false, ids, func() error {
				_, err := s.UpdateServerSettings(ctx, SystemScope, id, ServerSettings{Name: &name})
				return err
			})
			expect(t, "record facts (autocommit update)", false, ids, func() error {
				return s.RecordServerFacts(ctx, id, ServerFacts{OSName: "Debian GNU/Linux", OSVersion: "12"})
			})
			expect(t, "save status", false, ids, func() error {
				return s.SaveStatus(ctx, StatusRecord{ServerID: id, Status: "green", InsightsJSON: []byte("[]"), ComputedAt: time.Now().UTC()})
			})
			expect(t, "record contact", false, ids, func() error {
				return s.RecordContact(ctx, id, true, "", time.Now().UTC())
			})
			expect(t, "raw UPDATE servers", true, nil, func() error {
				return s.conn(ctx).Exec("UPDATE servers SET port = ? WHERE id = ?", 2222, id).Error
			})
			var g domain.Group
			expect(t, "create group", true, nil, func() error {
				var err error
				g, err = s.CreateGroup(ctx, domain.Group{Name: "gen-group"})
				return err
			})
			expect(t, "add group link", false, ids, func() error { return s.AddGroupServer(ctx, g.ID, id) })
			expect(t, "remove group link", true, nil, func() error { return s.RemoveGroupServer(ctx, g.ID, id) })
			expect(t, "delete group", true, nil, func() error { return s.DeleteGroup(ctx, g.ID) })
			expect(t, "a setting", false, nil, func() error { return s.PutSetting(ctx, "gen.test", 1) })
			expect(t, "a read", false, nil, func() error { _, err := s.ListServers(ctx, SystemScope, ServerFilter{}); return err })
			expect(t, "delete server", false, ids, func() error { return s.DeleteServer(ctx, id) })
			expect(t, "not local: touch", true, nil, func() error { s.TouchFleet(); return nil })
			expect(t, "not local: another replica's change", false, []string{"remote-1"}, func() error {
				s.NoteFleetChange(FleetChange{ServerIDs: []string{"remote-1"}})
				return nil
			})
		})
	}
}

// TestFleetChangesSinceBounds: a reader too far behind the log, or behind
// a change of everything, must rebuild.
func TestFleetChangesSinceBounds(t *testing.T) {
	s := &Store{changes: &changes{}}
	v := s.FleetVersion()
	s.NoteFleetChange(FleetChange{ServerIDs: []string{"a", "b", "a"}})
	if _, ids, ok := s.FleetChangesSince(v); !ok || !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("got %v %v", ids, ok)
	}
	for i := 0; i < fleetLogSize; i++ {
		s.NoteFleetChange(FleetChange{ServerIDs: []string{"x"}})
	}
	if _, _, ok := s.FleetChangesSince(v); ok {
		t.Fatal("a reader behind the log bound must rebuild")
	}
	v = s.FleetVersion()
	s.NoteFleetChange(FleetChange{All: true})
	if _, _, ok := s.FleetChangesSince(v); ok {
		t.Fatal("a change of everything must rebuild")
	}
	if cur, ids, ok := s.FleetChangesSince(s.FleetVersion()); !ok || len(ids) != 0 || cur != s.FleetVersion() {
		t.Fatal("a current reader has nothing to do")
	}
}

func TestWriteTarget(t *testing.T) {
	for sql, want := range map[string]string{
		"UPDATE servers SET port = 1":                                "servers",
		`update "server_status" set status = 'red'`:                  "server_status",
		"  INSERT INTO group_servers (group_id) VALUES (?)":          "group_servers",
		"INSERT OR IGNORE INTO servers (id) VALUES (?)":              "servers",
		"DELETE FROM server_groups WHERE id = ?":                     "server_groups",
		"WITH x AS (SELECT 1) UPDATE servers SET port = 2":           "servers",
		"UPDATE server_packages SET version = '1'":                   "server_packages",
		"SELECT * FROM servers":                                      "",
		"INSERT INTO package_names (name) SELECT name FROM servers ": "package_names",
	} {
		got := ""
		if m := writeTarget.FindStringSubmatch(sql); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q: table %q, want %q", sql, got, want)
		}
	}
}
