package sshexec_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
)

func startFleet(t testing.TB, cfg fleetsim.Config) *fleetsim.Fleet {
	t.Helper()
	f, err := fleetsim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func simTarget(inst *fleetsim.Instance) sshexec.Target {
	return sshexec.Target{Addr: inst.Addr, User: "lcm", Password: "x", HostKey: inst.AuthorizedHostKey()}
}

func TestPoolReusesOneConnection(t *testing.T) {
	f := startFleet(t, fleetsim.Config{N: 1})
	p := sshexec.NewPool(sshexec.PoolConfig{MaxConnsPerServer: 1, MaxSessionsPerConn: 4})
	defer p.Close()
	ex := p.Executor("srv-1", simTarget(f.Instances[0]))
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := ex.Run(context.Background(), remote.Command{Cmd: "sleep 0.01"})
			if err == nil && res.ExitCode != 0 {
				err = context.Canceled
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := f.Dials(); d != 1 {
		t.Fatalf("%d TCP dials for 50 commands, want 1", d)
	}
	if s := p.Stats(); s.Conns != 1 || s.Sessions != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPoolEvictsBrokenConnection(t *testing.T) {
	f := startFleet(t, fleetsim.Config{N: 1})
	p := sshexec.NewPool(sshexec.PoolConfig{})
	defer p.Close()
	ex := p.Executor("srv-1", simTarget(f.Instances[0]))
	run := func() {
		t.Helper()
		if res, err := ex.Run(context.Background(), remote.Command{Cmd: "hostname"}); err != nil || res.ExitCode != 0 {
			t.Fatalf("run: %v %d", err, res.ExitCode)
		}
	}
	run()
	f.DropConnections()
	run() // the dead connection is evicted and redialed once
	if d := f.Dials(); d != 2 {
		t.Fatalf("%d dials, want 2", d)
	}
}

func TestPoolCredentialVersion(t *testing.T) {
	f := startFleet(t, fleetsim.Config{N: 1})
	p := sshexec.NewPool(sshexec.PoolConfig{})
	defer p.Close()
	tg := simTarget(f.Instances[0])
	for v := int64(1); v <= 2; v++ {
		tg.CredentialVersion = v
		if _, err := p.Executor("srv-1", tg).Run(context.Background(), remote.Command{Cmd: "true"}); err != nil {
			t.Fatal(err)
		}
	}
	if d, s := f.Dials(), p.Stats(); d != 2 || s.Conns != 1 {
		t.Fatalf("dials %d conns %d; want a new connection for the new version and the old one closed", d, s.Conns)
	}
	p.Evict("srv-1")
	if s := p.Stats(); s.Conns != 0 {
		t.Fatalf("after evict: %+v", s)
	}
}

// TestPoolBoundsDialsApartFromSessions: with MaxDials 3, twenty servers
// dialed at once never have more than three dials in flight, and every
// command still runs.
func TestPoolBoundsDialsApartFromSessions(t *testing.T) {
	f := startFleet(t, fleetsim.Config{N: 20})
	p := sshexec.NewPool(sshexec.PoolConfig{MaxDials: 3})
	defer p.Close()
	var mu sync.Mutex
	most := 0
	sshexec.SlowDials(p, 30*time.Millisecond, func(n int) {
		mu.Lock()
		most = max(most, n)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	errs := make(chan error, len(f.Instances))
	for i, inst := range f.Instances {
		wg.Go(func() {
			_, err := p.Executor(fmt.Sprintf("srv-%d", i), simTarget(inst)).Run(context.Background(), remote.Command{Cmd: "true"})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if most > 3 || most == 0 {
		t.Fatalf("%d dials in flight at most, want 1..3", most)
	}
}

// TestPoolReportsDrained: once the idle sweep closes the last connection,
// OnDrained runs (once per drain).
func TestPoolReportsDrained(t *testing.T) {
	f := startFleet(t, fleetsim.Config{N: 2})
	drained := make(chan struct{}, 4)
	p := sshexec.NewPool(sshexec.PoolConfig{IdleTimeout: 300 * time.Millisecond, OnDrained: func() { drained <- struct{}{} }})
	defer p.Close()
	for i, inst := range f.Instances {
		if _, err := p.Executor(fmt.Sprintf("srv-%d", i), simTarget(inst)).Run(context.Background(), remote.Command{Cmd: "true"}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatalf("no drain reported; pool %+v", p.Stats())
	}
	if s := p.Stats(); s.Conns != 0 {
		t.Fatalf("drained with %d connections open", s.Conns)
	}
	select {
	case <-drained:
		t.Fatal("a drained pool reported again without new connections")
	case <-time.After(500 * time.Millisecond):
	}
}
