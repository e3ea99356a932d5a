package main

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// TestFleetChangesReachOtherReplicas: a change committed by one replica
// is recorded by another over NATS, with the servers it touched (their
// cached server listings are patched), in both directions.
func TestFleetChangesReachOtherReplicas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := plane.Start(t, plane.Options{NoWorker: true})
	// A second replica: its own store on the same database, same bus.
	st2, err := store.Open(ctx, store.Options{DataDir: p.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	st2.SetKeyring(p.Store.Keyring())
	log := slog.Default()
	for _, a := range []*app{{store: p.Store, bus: p.Bus, log: log}, {store: st2, bus: p.Bus, log: log}} {
		if err := a.wireFleetChanges(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitChanged := func(what string, st *store.Store, from store.FleetVersion, id string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; {
			_, ids, ok := st.FleetChangesSince(from)
			if ok && slices.Contains(ids, id) {
				return
			}
			if !ok {
				t.Fatalf("%s: recorded as a change of every server", what)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the other replica did not learn of it", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	v2 := st2.FleetVersion()
	srv := p.AddServer(t, "replica-test", "127.0.0.1:22", "ssh-ed25519 AAAA", "key")
	waitChanged("create on replica 1", st2, v2, srv.ID)

	v1 := p.Store.FleetVersion()
	name := "replica-renamed"
	if _, err := st2.UpdateServerSettings(ctx, store.SystemScope, srv.ID, store.ServerSettings{Name: &name}); err != nil {
		t.Fatal(err)
	}
	waitChanged("rename on replica 2", p.Store, v1, srv.ID)
	got, err := p.Store.GetServer(ctx, store.SystemScope, srv.ID)
	if err != nil || got.Name != name {
		t.Fatalf("replica 1 reads %q, %v", got.Name, err)
	}

	// A write to another table is not announced.
	v1, v2 = p.Store.FleetVersion(), st2.FleetVersion()
	if err := st2.PutSetting(ctx, "replica.test", 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Bus.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if p.Store.FleetVersion() != v1 || st2.FleetVersion() != v2 {
		t.Fatal("a settings write was recorded as a fleet change")
	}
	// A group deletion may touch any server: recorded as such remotely.
	g, err := st2.CreateGroup(ctx, domain.Group{Name: "replica-group"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); p.Store.FleetVersion().Gen == v1.Gen; {
		if time.Now().After(deadline) {
			t.Fatalf("group %s created on replica 2: replica 1 did not rebuild", g.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
