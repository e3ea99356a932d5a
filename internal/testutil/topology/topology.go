// Package topology starts LCM's scaled deployment as plain processes for
// end-to-end and fault tests: Debian's nginx as the TLS reverse proxy,
// a cluster of nats-server processes with JetStream (streams and buckets
// replicated), the CI's PostgreSQL (a database of its own per test,
// optionally behind a TCP proxy that can hang or refuse), several lcm-api
// replicas, lcm-worker processes per segment and cmd/fleetsim hosts. Every
// process is a real binary with its own log file, and can be stopped,
// killed (-9) and started again. Only _test.go files import it.
package topology

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// Options size the topology.
type Options struct {
	// Replicas of lcm-api (default 2) and nats-server nodes (default 3).
	Replicas  int
	NATSNodes int
	// StreamReplicas is nats.replicas (default: NATSNodes, at most 3).
	StreamReplicas int
	// Segments each get WorkersPerSegment lcm-worker processes (defaults
	// dc1, dc2 and 1) running WorkerConcurrency jobs at once (default 64).
	Segments          []string
	WorkersPerSegment int
	WorkerConcurrency int
	// DBProxy puts PostgreSQL behind a testutil.TCPProxy (Topology.DBProxy)
	// so a test can make the database hang or go away.
	DBProxy bool
	// Config is merged into every replica's config.json.
	Config map[string]any
	// NoWorkers starts no lcm-worker (start them with StartWorker).
	NoWorkers bool
	// SQLite gives the (single) replica an SQLite database in its data
	// dir instead of PostgreSQL.
	SQLite bool
	// Env is added to every replica's environment (e.g. the backup
	// passphrase).
	Env []string
}

// Topology is a running scaled deployment.
type Topology struct {
	t   testing.TB
	Dir string
	// PGURL is the test database, direct; DBURL what the replicas use
	// (through DBProxy when set).
	PGURL   string
	DBURL   string
	DBProxy *testutil.TCPProxy
	NATS    []*NATSNode
	APIs    []*Replica
	Workers []*Worker
	Nginx   *Proc
	// BaseURL is the proxy's HTTPS URL; Client trusts its certificate.
	BaseURL       string
	Client        *http.Client
	AdminPassword string

	opts Options
}

// JWTSecret is the replicas' shared jwt_secret.
const JWTSecret = "topology-test-secret-topology-test-secret-0123456789"

// Start brings the topology up and tears it down when the test ends.
func Start(t testing.TB, o Options) *Topology {
	t.Helper()
	if o.Replicas == 0 {
		o.Replicas = 2
	}
	if o.NATSNodes == 0 {
		o.NATSNodes = 3
	}
	if o.StreamReplicas == 0 {
		o.StreamReplicas = min(o.NATSNodes, 3)
	}
	if len(o.Segments) == 0 {
		o.Segments = []string{"dc1", "dc2"}
	}
	if o.WorkersPerSegment == 0 {
		o.WorkersPerSegment = 1
	}
	if o.WorkerConcurrency == 0 {
		o.WorkerConcurrency = 64
	}
	top := &Topology{t: t, Dir: t.TempDir(), opts: o}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// What each process said last, for the failure report.
		logs, _ := filepath.Glob(filepath.Join(top.Dir, "logs", "*.log"))
		logs = append(logs, filepath.Join(top.Dir, "nginx", "error.log"))
		for _, l := range logs {
			b, err := os.ReadFile(l)
			if err != nil || len(b) == 0 {
				continue
			}
			if len(b) > 6000 {
				t.Logf("--- %s (first 2000 bytes):\n%s", filepath.Base(l), b[:2000])
			}
			t.Logf("--- %s (last 3000 bytes):\n%s", filepath.Base(l), b[max(0, len(b)-3000):])
		}
	})
	if o.SQLite {
		if o.Replicas != 1 || o.DBProxy {
			t.Fatal("topology: SQLite serves one replica, without a database proxy")
		}
	} else {
		top.PGURL = testutil.PostgresURL(t)
		top.DBURL = top.PGURL
	}
	if o.DBProxy {
		u, err := url.Parse(top.PGURL)
		if err != nil {
			t.Fatal(err)
		}
		top.DBProxy = testutil.StartTCPProxy(t, u.Host)
		u.Host = top.DBProxy.Addr()
		top.DBURL = u.String()
	}
	top.NATS = startNATS(t, top.Dir, o.NATSNodes)
	urls := natsURLs(top.NATS)
	for i := 0; i < o.Replicas; i++ {
		top.APIs = append(top.APIs, newReplica(t, top.Dir, i, JWTSecret, top.DBURL, urls, o.StreamReplicas, o.Config, o.Env))
	}
	t.Cleanup(func() {
		for _, r := range top.APIs {
			r.Stop()
		}
	})
	// The first replica migrates the database, creates the master key and
	// the TLS certificate; the others share them (lcm.key copied as an
	// operator would).
	first := top.APIs[0]
	first.Start()
	first.WaitHealthy(t, 90*time.Second)
	top.AdminPassword = first.adminPassword(t)
	key, err := os.ReadFile(filepath.Join(first.Dir, "data", "lcm.key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range top.APIs[1:] {
		if err := os.WriteFile(filepath.Join(r.Dir, "data", "lcm.key"), key, 0o600); err != nil {
			t.Fatal(err)
		}
		r.Start()
	}
	for _, r := range top.APIs[1:] {
		r.WaitHealthy(t, 90*time.Second)
	}
	ca := testutil.NewTestCA(t)
	var port int
	top.Nginx, port = startNginx(t, top.Dir, ca, first.certificatePEM(t), top.APIs)
	top.BaseURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(ca.CertPEM))
	// Up to 256 connections to the proxy, kept alive (many users'
	// browsers and scripts); more requests at once queue in the client.
	top.Client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	testutil.WaitFor(t, 30*time.Second, "the proxy answers health", func() bool {
		resp, err := top.Client.Get(top.BaseURL + "/api/v1/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !o.NoWorkers {
		for _, seg := range o.Segments {
			for i := 0; i < o.WorkersPerSegment; i++ {
				top.StartWorker(seg)
			}
		}
	}
	return top
}

// NATSURLs is the comma-separated URLs of every node.
func (top *Topology) NATSURLs() string { return natsURLs(top.NATS) }

// Worker is one lcm-worker process.
type Worker struct {
	*Proc
	ID      string
	Segment string
	// TmpDir is the worker's TMPDIR (the secret scan reads it).
	TmpDir string
}

// StartWorker starts another lcm-worker for segment.
func (top *Topology) StartWorker(segment string) *Worker {
	top.t.Helper()
	id := fmt.Sprintf("worker-%s-%d", segment, len(top.Workers)+1)
	tmp := filepath.Join(top.Dir, id, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		top.t.Fatal(err)
	}
	w := &Worker{ID: id, Segment: segment, TmpDir: tmp}
	w.Proc = newProc(top.t, top.Dir, id, lcmBinary(top.t, "worker"),
		[]string{"-nats-url", top.NATSURLs(), "-segments", segment, "-concurrency", fmt.Sprint(top.opts.WorkerConcurrency), "-id", id},
		[]string{"TMPDIR=" + tmp})
	w.Start()
	top.t.Cleanup(w.Stop)
	top.Workers = append(top.Workers, w)
	return w
}

// Response is an answer through the proxy.
type Response struct {
	Code int
	Body []byte
	Err  error
}

// Do sends a request through the proxy with an optional JSON body and
// token (a session token or an lcm_ API key) and decodes a JSON answer into
// out. Transport errors are returned, not fatal (fault tests count them).
func (top *Topology) Do(method, path, token string, body, out any) Response {
	return doJSON(top.Client, top.BaseURL, method, path, token, body, out)
}

func doJSON(c *http.Client, base, method, path, token string, body, out any) Response {
	var rd io.Reader
	if body != nil {
		raw, ok := body.([]byte)
		if !ok {
			var err error
			if raw, err = json.Marshal(body); err != nil {
				return Response{Err: err}
			}
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, base+path, rd)
	if err != nil {
		return Response{Err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case strings.HasPrefix(token, "lcm_"):
		req.Header.Set("X-API-Key", token)
	case token != "":
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return Response{Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	r := Response{Code: resp.StatusCode, Body: raw, Err: err}
	if out != nil && len(raw) > 0 && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			r.Err = fmt.Errorf("decode %.200q: %w", raw, err)
		}
	}
	return r
}

// Must is Do that fails the test unless the answer has the status want.
func (top *Topology) Must(want int, method, path, token string, body, out any) Response {
	top.t.Helper()
	r := top.Do(method, path, token, body, out)
	if r.Err != nil || r.Code != want {
		top.t.Fatalf("%s %s: %d %v %.500s (want %d)", method, path, r.Code, r.Err, r.Body, want)
	}
	return r
}

// Login signs the admin in through the proxy and returns a session token.
func (top *Topology) Login() string {
	top.t.Helper()
	var res struct {
		Token string `json:"token"`
	}
	top.Must(http.StatusOK, "POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": top.AdminPassword}, &res)
	return res.Token
}

// APIKey creates a read-write API key for the admin (automation's way in).
func (top *Topology) APIKey(token string) string {
	top.t.Helper()
	var key struct {
		Key string `json:"key"`
	}
	top.Must(http.StatusCreated, "POST", "/api/v1/apikeys", token, map[string]any{"name": fmt.Sprintf("topology-%d", time.Now().UnixNano()), "scope": "readwrite"}, &key)
	return key.Key
}
