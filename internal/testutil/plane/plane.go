// Package plane starts an in-process LCM control plane for tests: a real
// store (SQLite or PostgreSQL) with a master key, a real NATS JetStream
// (embedded, or external by URL), the jobs and fleet services with their
// ingest, reaper and credential responder, and workers speaking the same
// protocol as lcm-worker. Only _test.go files import it.
package plane

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed" // Start without NATSURL embeds the server
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/jobs/runner"
	"github.com/lcmproject/lcm/internal/store"
)

// Options configure Start.
type Options struct {
	DatabaseURL string // "" = SQLite in a temp dir
	NATSURL     string // "" = embedded NATS
	DataDir     string // "" = temp dir (reuse it to restart on the same data)
	// NoWorker starts no worker; otherwise one serving Segments.
	NoWorker    bool
	Segments    []string
	Concurrency int
	// HeartbeatTimeout and ReapInterval shorten the reaper's bounds.
	HeartbeatTimeout time.Duration
	ReapInterval     time.Duration
	// HeartbeatInterval spaces the workers' heartbeats (runner.Config).
	HeartbeatInterval time.Duration
	// Listen makes the embedded NATS accept remote workers on this address
	// (TLS with a generated certificate, see Plane.CACertPEM) with the API
	// user api/api-pass and the given worker users.
	Listen  string
	Workers []WorkerAccount
}

// WorkerAccount is a remote worker's NATS account on a listening plane.
type WorkerAccount struct {
	User, Password string
	Segments       []string
}

// Plane is a running control plane.
type Plane struct {
	Store   *store.Store
	Bus     *bus.Bus
	Jobs    *jobs.Service
	Fleet   *fleet.Service
	Worker  *runner.Worker
	Admin   *domain.Principal
	DataDir string
	// CACertPEM is the listening NATS's certificate (trust it as CA).
	CACertPEM []byte

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	beat   time.Duration // workers' heartbeat interval
}

// Start starts a control plane; it stops when the test ends.
func Start(t testing.TB, o Options) *Plane {
	t.Helper()
	ctx := context.Background()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	st, err := store.Open(ctx, store.Options{URL: o.DatabaseURL, DataDir: o.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	kr, _, err := st.ResolveMasterKey(ctx, o.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	st.SetKeyring(kr)
	if _, err := st.SeedIdentity(ctx, func() (string, error) { return "x", nil }); err != nil {
		t.Fatal(err)
	}
	bo := bus.Options{URL: o.NATSURL, DataDir: o.DataDir}
	var caPEM []byte
	if o.Listen != "" {
		bo.Listen, bo.User, bo.Password = o.Listen, "api", "api-pass"
		bo.TLS, caPEM = tlsConfig(t, o.DataDir)
		bo.Users = []bus.User{bus.FullUser("api", "api-pass")}
		for _, w := range o.Workers {
			bo.Users = append(bo.Users, bus.WorkerUser(w.User, w.Password, w.Segments))
		}
	}
	b, err := bus.Open(ctx, bo)
	if err != nil {
		t.Fatal(err)
	}
	js := jobs.New(st, b, nil)
	if o.HeartbeatTimeout > 0 {
		js.HeartbeatTimeout = o.HeartbeatTimeout
	}
	if o.ReapInterval > 0 {
		js.ReapInterval = o.ReapInterval
	}
	p := &Plane{Store: st, Bus: b, Jobs: js, Fleet: fleet.New(st, js, nil), DataDir: o.DataDir, CACertPEM: caPEM, beat: o.HeartbeatInterval,
		Admin: &domain.Principal{UserID: "admin-test", Username: "admin", Roles: []string{domain.RoleAdmin}, Permissions: all()}}
	rctx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	p.wg.Add(1)
	go func() { defer p.wg.Done(); _ = js.Run(rctx) }()
	if !o.NoWorker {
		p.Worker = p.StartWorker(t, o.Segments, o.Concurrency)
	}
	t.Cleanup(p.Stop)
	return p
}

func all() map[string]bool {
	m := map[string]bool{}
	for _, c := range domain.AllPermissions {
		m[c] = true
	}
	return m
}

// StartWorker starts another in-process worker on the plane's bus.
func (p *Plane) StartWorker(t testing.TB, segments []string, concurrency int) *runner.Worker {
	t.Helper()
	w, err := runner.New(runner.Config{Bus: p.Bus, Segments: segments, Concurrency: concurrency, HeartbeatInterval: p.beat})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		<-done
	}()
	prev := p.cancel
	p.cancel = func() { cancel(); prev() }
	return w
}

// Stop stops workers and services and closes bus and store.
func (p *Plane) Stop() {
	p.once.Do(func() {
		p.cancel()
		p.wg.Wait()
		p.Bus.Close()
		p.Store.Close()
	})
}

// Manager creates a user with role manager and returns its principal.
func (p *Plane) Manager(t testing.TB, username string) *domain.Principal {
	t.Helper()
	u, err := p.Store.CreateUser(context.Background(), store.NewUser{Username: username, Active: true, Roles: []string{domain.RoleManager}})
	if err != nil {
		t.Fatal(err)
	}
	perms := map[string]bool{}
	for _, c := range domain.ManagerPermissions {
		perms[c] = true
	}
	return &domain.Principal{UserID: u.ID, Username: username, Roles: []string{domain.RoleManager}, Permissions: perms}
}

// WaitJob waits until a job is final and returns it.
func (p *Plane) WaitJob(t testing.TB, id string, timeout time.Duration) domain.Job {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		j, err := p.Store.GetJob(context.Background(), store.SystemScope, id)
		if err == nil && j.Status.Terminal() {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not final after %s (status %s, err %v)", id, timeout, j.Status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// AddServer stores a joined server directly (for simulator tests).
func (p *Plane) AddServer(t testing.TB, name, addr, hostKey, privateKeyPEM string, groupIDs ...string) domain.Server {
	t.Helper()
	host, port := splitAddr(t, addr)
	srv, err := p.Store.CreateServer(context.Background(), store.NewServer{
		Server: domain.Server{Name: name, Host: host, Port: port, Transport: domain.TransportSSH, Status: domain.ServerGreen,
			Joined: true, AuthMethod: domain.AuthKey, HostKey: hostKey, PackageFamily: "apt", GroupIDs: groupIDs},
		Secrets: store.ServerSecrets{Username: domain.ManagementUser, PrivateKey: privateKeyPEM},
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
