package selfreg_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/selfreg"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

func TestDecideTable(t *testing.T) {
	ok := selfreg.Inputs{SSHReachable: true, HandoverKey: true}
	with := func(f func(*selfreg.Inputs)) selfreg.Inputs { in := ok; f(&in); return in }
	cases := []struct {
		name string
		in   selfreg.Inputs
		want bool
	}{
		{"all clear registers", ok, true},
		{"installation-time opt-out", with(func(i *selfreg.Inputs) { i.OptOut = true }), false},
		{"running in a container", with(func(i *selfreg.Inputs) { i.InContainer = true }), false},
		{"no SSH service reachable", with(func(i *selfreg.Inputs) { i.SSHReachable = false }), false},
		{"loopback port 22 already managed", with(func(i *selfreg.Inputs) { i.LoopbackManaged = true }), false},
		{"entry deleted earlier", with(func(i *selfreg.Inputs) { i.Disabled = true }), false},
		{"no handover key", with(func(i *selfreg.Inputs) { i.HandoverKey = false }), false},
		{"everything against", selfreg.Inputs{OptOut: true, InContainer: true, LoopbackManaged: true, Disabled: true}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := selfreg.Decide(c.in)
			if d.Register != c.want || d.Reason == "" {
				t.Fatalf("Decide(%+v) = %+v, want register=%v with a reason", c.in, d, c.want)
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for h, want := range map[string]bool{"127.0.0.1": true, "127.8.9.1": true, "::1": true, "[::1]": true,
		"localhost": true, "LOCALHOST": true, "10.0.0.1": false, "lcm-host": false, "192.0.2.1": false} {
		if got := selfreg.IsLoopback(h); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", h, got, want)
		}
	}
}

// privateKeyPEM returns a fresh OpenSSH private key.
func privateKeyPEM(t testing.TB) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(b))
}

func fakeHostKey(t testing.TB) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type env struct {
	p        *plane.Plane
	dir      string
	hostKey  ssh.PublicKey
	probeErr error
	probed   int
	environ  map[string]string
	inCont   bool
}

func newEnv(t *testing.T) *env {
	p := plane.Start(t, plane.Options{NoWorker: true})
	p.Fleet.OnDeleted(selfreg.OnDeleted(p.Store, nil))
	return &env{p: p, dir: t.TempDir(), hostKey: fakeHostKey(t), environ: map[string]string{}}
}

func (e *env) handover(t *testing.T, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(e.dir, selfreg.HandoverFile)
	if err := os.WriteFile(path, []byte(privateKeyPEM(t)), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func (e *env) run(t *testing.T) selfreg.Decision {
	t.Helper()
	d, err := selfreg.Run(context.Background(), selfreg.Deps{Store: e.p.Store, Fleet: e.p.Fleet, DataDir: e.dir,
		Getenv:      func(k string) string { return e.environ[k] },
		InContainer: func() bool { return e.inCont },
		Probe: func(ctx context.Context, addr string) (ssh.PublicKey, string, error) {
			e.probed++
			if addr != selfreg.SSHAddr {
				t.Errorf("probed %s, want %s", addr, selfreg.SSHAddr)
			}
			if e.probeErr != nil {
				return nil, "", e.probeErr
			}
			return e.hostKey, ssh.FingerprintSHA256(e.hostKey), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, selfreg.HandoverFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("handover file still present after Run (%+v): %v", d, err)
	}
	return d
}

func (e *env) servers(t *testing.T) []domain.Server {
	t.Helper()
	out, err := e.p.Store.ListServers(context.Background(), store.ScopeOf(e.p.Admin), store.ServerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHandoverRegistersAndDeletes(t *testing.T) {
	e := newEnv(t)
	path := e.handover(t, 0o600)
	key, _ := os.ReadFile(path)
	d := e.run(t)
	if !d.Register {
		t.Fatalf("not registered: %s", d.Reason)
	}
	srvs := e.servers(t)
	if len(srvs) != 1 || srvs[0].Name != selfreg.ServerName || srvs[0].Host != "127.0.0.1" || srvs[0].Port != 22 || !srvs[0].Joined {
		t.Fatalf("servers = %+v", srvs)
	}
	if srvs[0].HostKeyFingerprint != ssh.FingerprintSHA256(e.hostKey) {
		t.Fatalf("pinned %s, want %s", srvs[0].HostKeyFingerprint, ssh.FingerprintSHA256(e.hostKey))
	}
	_, sec, err := e.p.Store.ServerSecretsOf(context.Background(), srvs[0].ID)
	if err != nil || sec.PrivateKey != string(key) || sec.Username != domain.ManagementUser {
		t.Fatalf("stored key/user wrong: user=%q err=%v", sec.Username, err)
	}
	if srvs[0].ActiveJobID == "" {
		t.Fatal("no connectivity check started")
	}
	// A second handover (reinstall) does not duplicate: loopback is managed.
	e.handover(t, 0o600)
	if d := e.run(t); d.Register || len(e.servers(t)) != 1 {
		t.Fatalf("second run registered again: %+v", d)
	}
}

func TestHandoverWrongModeRefusedAndDeleted(t *testing.T) {
	e := newEnv(t)
	e.handover(t, 0o644)
	if d := e.run(t); d.Register {
		t.Fatalf("0644 handover registered: %+v", d)
	}
	if n := len(e.servers(t)); n != 0 {
		t.Fatalf("%d servers, want 0", n)
	}
}

func TestHandoverDeletedWhenSkipped(t *testing.T) {
	cases := map[string]func(e *env){
		"ssh unreachable": func(e *env) { e.probeErr = errors.New("connection refused") },
		"in container":    func(e *env) { e.inCont = true },
		"opt-out env":     func(e *env) { e.environ[selfreg.OptOutEnv] = "1" },
		"opt-out marker": func(e *env) {
			_ = os.WriteFile(filepath.Join(e.dir, selfreg.OptOutFile), nil, 0o600)
		},
		"already managed": func(e *env) {
			_, err := e.p.Store.CreateServer(context.Background(), store.NewServer{Server: domain.Server{Name: "my-box",
				Host: "127.0.0.2", Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown,
				AuthMethod: domain.AuthKey, Joined: true, HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:x"}})
			if err != nil {
				panic(err)
			}
		},
		"disabled": func(e *env) { _ = e.p.Store.PutSetting(context.Background(), selfreg.SettingDisabled, true) },
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			setup(e)
			before := len(e.servers(t))
			e.handover(t, 0o600)
			if d := e.run(t); d.Register {
				t.Fatalf("registered: %+v", d)
			}
			if n := len(e.servers(t)); n != before {
				t.Fatalf("%d servers, want %d", n, before)
			}
		})
	}
}

func TestLoopbackOtherPortIsNotManaged(t *testing.T) {
	e := newEnv(t)
	if _, err := e.p.Store.CreateServer(context.Background(), store.NewServer{Server: domain.Server{Name: selfreg.ServerName,
		Host: "127.0.0.1", Port: 2222, Transport: domain.TransportSSH, Status: domain.ServerUnknown,
		AuthMethod: domain.AuthKey, Joined: true, HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:x"}}); err != nil {
		t.Fatal(err)
	}
	e.handover(t, 0o600)
	// Same name, different port: detection is by loopback and port only.
	// The name is taken, so creation fails, but the decision was register.
	d, _ := selfreg.Run(context.Background(), selfreg.Deps{Store: e.p.Store, Fleet: e.p.Fleet, DataDir: e.dir,
		Getenv: func(string) string { return "" }, InContainer: func() bool { return false },
		Probe: func(context.Context, string) (ssh.PublicKey, string, error) { return e.hostKey, "", nil }})
	if d.Reason == selfreg.Decide(selfreg.Inputs{LoopbackManaged: true}).Reason {
		t.Fatalf("port 2222 counted as managed: %+v", d)
	}
	if _, err := os.Stat(filepath.Join(e.dir, selfreg.HandoverFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("handover file not deleted after failed registration")
	}
}

func TestDeletingSelfEntrySetsDisabled(t *testing.T) {
	e := newEnv(t)
	e.handover(t, 0o600)
	if d := e.run(t); !d.Register {
		t.Fatal(d.Reason)
	}
	srv := e.servers(t)[0]
	// Let the pending connectivity check end so the server is free; it is
	// joined, so decommission goes through its job: finish it by aborting
	// the check and completing a decommission is a worker's business. The
	// hook is the same for both paths; exercise the immediate one.
	if _, err := e.p.Jobs.Abort(context.Background(), e.p.Admin, srv.ActiveJobID); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.p.Store.DeleteServer(ctx, srv.ID); err != nil {
		t.Fatal(err)
	}
	// Re-create as never joined so Fleet.Decommission deletes at once.
	n, err := e.p.Store.CreateServer(ctx, store.NewServer{Server: domain.Server{ID: srv.ID, Name: selfreg.ServerName,
		Host: "127.0.0.1", Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey,
		HostKey: srv.HostKey, HostKeyFingerprint: srv.HostKeyFingerprint}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Fleet.Decommission(ctx, e.p.Admin, n.ID); err != nil {
		t.Fatal(err)
	}
	var disabled bool
	if ok, err := e.p.Store.GetSetting(ctx, selfreg.SettingDisabled, &disabled); err != nil || !ok || !disabled {
		t.Fatalf("%s not set (ok=%v err=%v)", selfreg.SettingDisabled, ok, err)
	}
	e.handover(t, 0o600)
	if d := e.run(t); d.Register || len(e.servers(t)) != 0 {
		t.Fatalf("re-created after deletion: %+v", d)
	}
}
