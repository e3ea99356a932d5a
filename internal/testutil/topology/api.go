package topology

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// Replica is one lcm-api process (its own data dir and config.json, the
// shared PostgreSQL database and NATS cluster, no in-process worker).
type Replica struct {
	*Proc
	Dir         string
	Port        int
	MetricsPort int
	// Direct is an HTTPS client for this replica alone (its self-signed
	// certificate is not verified: the proxy's path is the verified one).
	Direct *http.Client
}

// URL is the replica's own base URL (bypassing the proxy).
func (r *Replica) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", r.Port) }

// Healthy reports whether GET /api/v1/health answers 200.
func (r *Replica) Healthy() bool {
	resp, err := r.Direct.Get(r.URL() + "/api/v1/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitHealthy waits until the replica answers 200, failing if it exits.
func (r *Replica) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !r.Healthy() {
		if !r.Running() {
			t.Fatalf("%s exited (code %d) before it was healthy:\n%s", r.Name, r.ExitCode(), r.Tail(4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy after %s:\n%s", r.Name, timeout, r.Tail(4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Restart stops (SIGTERM) and starts the replica and waits until healthy.
func (r *Replica) Restart(t testing.TB) {
	t.Helper()
	r.Stop()
	r.Start()
	r.WaitHealthy(t, 60*time.Second)
}

// newReplica writes a replica's config.json: the shared secret, database
// and NATS; no worker or scanner in-process (workers run as their own
// processes in this topology).
func newReplica(t testing.TB, dir string, i int, jwtSecret, dbURL, natsURL string, replicas int, extra map[string]any, env []string) *Replica {
	t.Helper()
	rdir := filepath.Join(dir, fmt.Sprintf("api-%d", i+1))
	if err := os.MkdirAll(filepath.Join(rdir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := &Replica{Dir: rdir, Port: freePort(t), MetricsPort: freePort(t),
		Direct: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 64}}}
	cfg := map[string]any{
		// The agent listener (and its in-process gateway) on a port of
		// its own: agent enrollment tokens need one.
		"jwt_secret": jwtSecret, "port": r.Port, "agent_host": "127.0.0.1", "agent_port": freePort(t), "data_dir": "data",
		"metrics_port": r.MetricsPort,
		"database":     map[string]any{"url": dbURL}, // "" = SQLite in the data dir
		"nats":         map[string]any{"url": natsURL, "replicas": replicas},
		"worker":       map[string]any{"disabled": true},
		"scanner":      map[string]any{"disabled": true},
		// Behind the proxy: the client address comes from X-Forwarded-For.
		"trust_proxy_header": true,
		// The fault tests sign in with the admin's password alone (2FA is
		// not what they test).
		"require_2fa_roles": []string{},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	path := filepath.Join(rdir, "config.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r.Proc = newProc(t, dir, fmt.Sprintf("api-%d", i+1), lcmBinary(t, "api"), []string{"-config", path}, env)
	return r
}

var adminPasswordLine = regexp.MustCompile(`password: (\S+)`)

// adminPassword reads the generated admin password from the first
// replica's console output.
func (r *Replica) adminPassword(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(r.Log)
	if err != nil {
		t.Fatal(err)
	}
	m := adminPasswordLine.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s printed no admin password:\n%s", r.Name, r.Tail(4000))
	}
	return string(m[1])
}

// certificatePEM fetches the replica's TLS certificate (the one every
// replica reads from the shared database) for the proxy to verify.
func (r *Replica) certificatePEM(t testing.TB) []byte {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", r.Port),
		&tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		t.Fatal("replica sent no certificate")
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certs[0].Raw})
}

// Exit is one end of a supervised replica.
type Exit struct {
	At   time.Time
	Code int
}

// Supervise restarts the replica whenever it ends, after restartSec, as
// systemd does with Restart=always (deploy/systemd/lcm-api.service), until
// the test ends or stop is called. Every end is sent on the returned
// channel (buffered; ends beyond its room are not reported).
func (r *Replica) Supervise(t testing.TB, restartSec time.Duration) (exits <-chan Exit, stop func()) {
	ch := make(chan Exit, 256)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-r.Done():
			}
			select {
			case ch <- Exit{At: time.Now(), Code: r.ExitCode()}:
			default:
			}
			select {
			case <-quit:
				return
			case <-time.After(restartSec):
			}
			r.Start()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(quit)
			<-done
		})
	}
	t.Cleanup(stop)
	return ch, stop
}

// ConfigPath is the replica's config.json.
func (r *Replica) ConfigPath() string { return filepath.Join(r.Dir, "config.json") }

// DataDir is the replica's data directory (lcm.key, SQLite, backups).
func (r *Replica) DataDir() string { return filepath.Join(r.Dir, "data") }
