//go:build compose

// The compose stack, for real: scripts/compose-test.sh (make compose-test)
// builds the images and runs this test, which copies deploy/compose into a
// scratch directory, writes its secrets with setup.sh, starts it with
// podman-compose, waits for every container's health check, signs in
// through the proxy over verified HTTPS, joins Debian test host 19 and runs
// jobs on the workers of both segments, runs a job with one NATS node
// stopped and requests through an API replica's restart, then tears
// everything down.
//
//	go test -tags compose -run TestComposeStack -v ./deploy/compose/
//
// Test host 19 is reached from the containers through a TCP forwarder on
// the compose network's gateway address (the test hosts listen on the
// machine's loopback, which a bridged container cannot see).
package compose_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/lcmproject/lcm/internal/testutil"
)

// testHost is the Debian test host this test joins (docs/testing.md).
const testHost = 19

// Bounds: generous for a loaded 2-core machine, finite so a broken stack
// fails the run instead of hanging it.
const (
	upTimeout     = 5 * time.Minute // podman-compose up
	healthTimeout = 4 * time.Minute // every container healthy
	jobTimeout    = 4 * time.Minute // one job to its final state
)

type stack struct {
	t       *testing.T
	dir     string // scratch copy of deploy/compose
	project string
	url     string // https://127.0.0.1:port (the proxy)
	client  *http.Client
	env     []string
	phase   func(string)
	extra   []string // containers started outside podman-compose
}

func TestComposeStack(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"podman", "podman-compose", "openssl"} {
		testutil.RequireTool(t, tool)
	}
	if _, err := os.Stat("/usr/lib/cni/dnsname"); err != nil {
		testutil.Unavailable(t, "podman's dnsname CNI plugin (apt-get install golang-github-containernetworking-plugin-dnsname): the services find each other by name")
	}
	for _, img := range []string{"lcm-api", "lcm-worker", "lcm-scanner", "lcm-agentgw", "lcm-nats", "lcm-postgres", "lcm-proxy"} {
		if exec.Command("podman", "image", "exists", "localhost/lcm/"+img+":latest").Run() != nil {
			testutil.Unavailable(t, "image localhost/lcm/%s:latest (run make images)", img)
		}
	}
	start := time.Now()
	phase := func(name string) {
		t.Logf("%-32s %6.1f s", name, time.Since(start).Seconds())
	}
	h := testutil.TestHostAt(t, testHost)
	testutil.ResetTestHost(t, h)
	t.Cleanup(func() {
		testutil.ResetTestHost(t, h)
		phase("test host 19 reset, done")
	})
	phase("test host 19 reset")
	s := up(t)
	s.phase = phase
	phase("stack up")
	s.waitHealthy(healthTimeout)
	phase("every container healthy")

	token := s.signIn()
	phase("signed in through the proxy")

	fwd := forward(t, s.gateway(), h.Addr)
	host, port, _ := net.SplitHostPort(fwd)
	var probe struct {
		HostKey string `json:"host_key"`
	}
	s.call("POST", "/api/v1/servers/probe", token, map[string]any{"host": host, "port": atoi(port)}, &probe, 200)
	if !contains(h.HostKeys, probe.HostKey) {
		t.Fatalf("the probe through the forwarder saw host key %q, not test host %d's", probe.HostKey, testHost)
	}
	var joined struct {
		JobID  string `json:"job_id"`
		Server struct {
			ID string `json:"id"`
		} `json:"server"`
	}
	s.call("POST", "/api/v1/servers/join", token, map[string]any{
		"name": "compose-host-19", "host": host, "port": atoi(port), "username": "root", "auth": "key",
		"private_key": string(h.PrivateKey), "host_key": probe.HostKey, "segment": "dc2",
	}, &joined, 202, 200)
	s.waitJob(token, joined.JobID)
	s.ranOn("worker-dc2", joined.JobID)
	phase("joined (job on worker-dc2)")

	// A job in the other segment: the server moves to dc1.
	s.call("PATCH", "/api/v1/servers/"+joined.Server.ID+"/settings", token, map[string]any{"segment": "dc1"}, nil, 200)
	var refresh struct {
		JobID string `json:"job_id"`
	}
	s.call("POST", "/api/v1/servers/"+joined.Server.ID+"/refresh-all", token, nil, &refresh, 202, 200)
	s.waitJob(token, refresh.JobID)
	s.ranOn("worker-dc1", refresh.JobID)
	phase("refresh (job on worker-dc1)")

	// Both replicas answered authenticated requests behind the proxy: the
	// session is valid on either.
	for _, api := range []string{"api-1", "api-2"} {
		if !strings.Contains(s.logs(api), "/api/v1/servers/") {
			t.Errorf("%s answered no server request: the proxy did not spread the load", api)
		}
	}

	s.scaleOut(token, joined.Server.ID)
	phase("scale out: segment dc3")
	s.faults(token, joined.Server.ID)
	phase("NATS node down, API restart")
}

// scaleOut follows README.md "Scale out" for a new segment: setup.sh with
// the longer worker list, the NATS nodes reload their accounts on SIGHUP,
// a worker container for dc3 joins the network, and a job of a server
// moved to dc3 runs on it.
func (s *stack) scaleOut(token, serverID string) {
	t := s.t
	env := s.env
	s.env = append(s.env, "LCM_COMPOSE_WORKERS=worker-dc1:dc1,default worker-dc2:dc2 worker-dc3:dc3")
	s.run(2*time.Minute, "./setup.sh")
	s.env = env
	s.podman("kill", "--signal", "HUP", s.container("nats-1"), s.container("nats-2"), s.container("nats-3"))
	name := s.project + "_worker-dc3"
	s.extra = append(s.extra, name)
	s.podman("run", "-d", "--name", name, "--network", s.project+"_default", "--restart", "unless-stopped",
		"-e", "LCM_WORKER_NATS_URL=nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222",
		"-e", "LCM_WORKER_NATS_USER=worker-dc3",
		"-e", "LCM_WORKER_NATS_PASSWORD_FILE=/run/secrets/nats_worker_dc3",
		"-e", "LCM_WORKER_SEGMENTS=dc3", "-e", "LCM_WORKER_METRICS_ADDR=0.0.0.0:9340",
		"-v", filepath.Join(s.dir, "secrets/nats_worker_dc3")+":/run/secrets/nats_worker_dc3:ro",
		"--health-cmd", "lcm-probe http://127.0.0.1:9340/healthz",
		"localhost/lcm/lcm-worker:latest")
	deadline := time.Now().Add(healthTimeout)
	for exec.Command("podman", "healthcheck", "run", name).Run() != nil {
		if time.Now().After(deadline) {
			out, _ := exec.Command("podman", "logs", name).CombinedOutput()
			t.Fatalf("worker-dc3 never healthy:\n%s", tailOf(out, 3000))
		}
		time.Sleep(time.Second)
	}
	s.call("PATCH", "/api/v1/servers/"+serverID+"/settings", token, map[string]any{"segment": "dc3"}, nil, 200)
	var j struct {
		JobID string `json:"job_id"`
	}
	s.call("POST", "/api/v1/servers/"+serverID+"/refresh-all", token, nil, &j, 202, 200)
	s.waitJob(token, j.JobID)
	s.ranOnContainer(name, j.JobID)
}

// faults: a job runs with one NATS node of three stopped (every stream has
// three replicas), and the session and jobs keep working through the proxy
// while an API replica restarts.
func (s *stack) faults(token, serverID string) {
	t := s.t
	s.podman("stop", "-t", "10", s.container("nats-2"))
	var j struct {
		JobID string `json:"job_id"`
	}
	s.call("POST", "/api/v1/servers/"+serverID+"/refresh-all", token, nil, &j, 202, 200)
	s.waitJob(token, j.JobID)
	s.podman("start", s.container("nats-2"))
	s.waitHealthy(healthTimeout)

	s.podman("restart", "-t", "10", s.container("api-1"))
	// While api-1 restarts the proxy sends everything to api-2.
	for i := 0; i < 20; i++ {
		s.call("GET", "/api/v1/servers/"+serverID, token, nil, nil, 200)
	}
	s.call("POST", "/api/v1/servers/"+serverID+"/refresh-all", token, nil, &j, 202, 200)
	s.waitJob(token, j.JobID)
	s.waitHealthy(healthTimeout)
	t.Log("a job with a NATS node down, and requests through an API restart: fine")
}

// up copies deploy/compose into a scratch directory, writes its secrets
// and starts it. The stack is torn down (containers, volumes, network) at
// the end of the test, logs printed first when it failed.
func up(t *testing.T) *stack {
	t.Helper()
	src, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "lcmci")
	for _, p := range []string{"docker-compose.yml", "setup.sh", "nats/nats.conf", "proxy/nginx.conf"} {
		b, err := os.ReadFile(filepath.Join(src, p))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	httpsPort, gwPort := testutil.FreePort(t), testutil.FreePort(t)
	s := &stack{t: t, dir: dir, project: fmt.Sprintf("lcmci%d", os.Getpid()%100000),
		url: fmt.Sprintf("https://127.0.0.1:%d", httpsPort)}
	s.env = append(os.Environ(), fmt.Sprintf("LCM_HTTPS_PORT=%d", httpsPort), "LCM_HTTPS_BIND=127.0.0.1",
		fmt.Sprintf("LCM_AGENTGW_PORT=%d", gwPort), "LCM_AGENTGW_BIND=127.0.0.1", "LCM_PUBLIC_HOST=localhost")
	s.run(2*time.Minute, "./setup.sh")
	t.Cleanup(s.down)
	s.run(upTimeout, "podman-compose", "-p", s.project, "up", "-d")
	ca, err := os.ReadFile(filepath.Join(dir, "secrets/ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("secrets/ca.crt holds no certificate")
	}
	// Verified HTTPS: the proxy's certificate from the stack's CA.
	s.client = &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return s
}

func (s *stack) down() {
	if s.t.Failed() {
		for _, c := range s.containers() {
			out, _ := exec.Command("podman", "logs", "--tail", "60", c).CombinedOutput()
			s.t.Logf("--- %s ---\n%s", c, out)
		}
	}
	if len(s.extra) > 0 {
		_ = exec.Command("podman", append([]string{"rm", "-f", "-t", "5"}, s.extra...)...).Run()
	}
	// One podman stop for all (in parallel): podman-compose 1.0.3 stops
	// them one after the other.
	if c := s.containers(); len(c) > 0 {
		_ = exec.Command("podman", append([]string{"stop", "-t", "5"}, c...)...).Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman-compose", "-p", s.project, "down", "-v", "-t", "5")
	cmd.Dir, cmd.Env = s.dir, s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Errorf("podman-compose down: %v\n%s", err, tailOf(out, 2000))
	}
	// podman-compose 1.0.3 leaves the network behind.
	_ = exec.Command("podman", "network", "rm", "-f", s.project+"_default").Run()
	if left := s.containers(); len(left) > 0 {
		s.t.Errorf("containers left after down: %v", left)
	}
	if s.phase != nil {
		s.phase("stack torn down")
	}
}

func (s *stack) run(timeout time.Duration, name string, args ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = s.dir, s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("%s %v: %v\n%s", name, args, err, tailOf(out, 4000))
	}
}

func (s *stack) podman(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("podman", args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("podman %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *stack) containers() []string {
	out, _ := exec.Command("podman", "ps", "-a", "--filter", "label=io.podman.compose.project="+s.project, "--format", "{{.Names}}").Output()
	return strings.Fields(string(out))
}

// container is the name podman-compose 1.0.3 gives a service's container.
func (s *stack) container(service string) string { return s.project + "_" + service + "_1" }

func (s *stack) logs(service string) string {
	out, _ := exec.Command("podman", "logs", s.container(service)).CombinedOutput()
	return string(out)
}

// waitHealthy runs every container's health check (podman schedules
// them with systemd timers; without systemd nothing runs them) until all
// pass.
func (s *stack) waitHealthy(timeout time.Duration) {
	s.t.Helper()
	services := []string{"postgres", "nats-1", "nats-2", "nats-3", "api-1", "api-2", "proxy", "worker-dc1", "worker-dc2", "scanner", "agentgw"}
	deadline := time.Now().Add(timeout)
	pending := map[string]string{}
	for _, svc := range services {
		pending[svc] = "not checked"
	}
	for len(pending) > 0 {
		for svc := range pending {
			out, err := exec.Command("podman", "healthcheck", "run", s.container(svc)).CombinedOutput()
			if err == nil {
				delete(pending, svc)
			} else {
				pending[svc] = strings.TrimSpace(string(out))
			}
		}
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("not healthy after %s: %v", timeout, pending)
		}
		time.Sleep(2 * time.Second)
	}
}

// gateway is the compose network's gateway address: where the containers
// reach this machine.
func (s *stack) gateway() string {
	s.t.Helper()
	var nets []struct {
		Subnets []struct {
			Gateway string `json:"gateway"`
		} `json:"subnets"`
	}
	if err := json.Unmarshal([]byte(s.podman("network", "inspect", s.project+"_default")), &nets); err != nil || len(nets) != 1 || len(nets[0].Subnets) == 0 {
		s.t.Fatalf("network %s_default: %v %+v", s.project, err, nets)
	}
	return nets[0].Subnets[0].Gateway
}

func (s *stack) call(method, path, token string, body, out any, want ...int) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	ok := false
	for _, w := range want {
		ok = ok || resp.StatusCode == w
	}
	if !ok {
		s.t.Fatalf("%s %s: %d %s (want %v)", method, path, resp.StatusCode, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

var adminPassword = regexp.MustCompile(`(?m)^\s*password: (\S+)`)

// signIn signs the admin in through the proxy with the password the
// replica that created the account printed once, and sets up the TOTP
// second factor a fresh installation demands of admins.
func (s *stack) signIn() string {
	s.t.Helper()
	var pw string
	for _, api := range []string{"api-1", "api-2"} {
		if m := adminPassword.FindStringSubmatch(s.logs(api)); m != nil {
			pw = m[1]
		}
	}
	if pw == "" {
		s.t.Fatal("no replica printed the admin password")
	}
	var login struct {
		Token string `json:"token"`
		User  struct {
			MustSetup2FA bool `json:"must_setup_2fa"`
		} `json:"user"`
	}
	s.call("POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": pw}, &login, 200)
	if !login.User.MustSetup2FA {
		s.t.Fatal("a fresh admin must be asked to set up 2FA")
	}
	var setup struct {
		Secret string `json:"secret"`
	}
	s.call("POST", "/api/v1/auth/2fa/setup", login.Token, nil, &setup, 200)
	code, err := totp.GenerateCode(setup.Secret, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	s.call("POST", "/api/v1/auth/2fa/enable", login.Token, map[string]string{"code": code}, nil, 200)
	s.call("GET", "/api/v1/auth/me", login.Token, nil, nil, 200)
	return login.Token
}

func (s *stack) waitJob(token, id string) {
	s.t.Helper()
	deadline := time.Now().Add(jobTimeout)
	var job struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	for time.Now().Before(deadline) {
		s.call("GET", "/api/v1/jobs/"+id, token, nil, &job, 200)
		switch job.Status {
		case "success":
			return
		case "failed", "aborted", "blocked":
			var out struct {
				Output string `json:"output"`
			}
			s.call("GET", "/api/v1/jobs/"+id+"/ssh-output", token, nil, &out, 200)
			s.t.Fatalf("job %s ended %s: %s\n%s", id, job.Status, job.Error, tailOf([]byte(out.Output), 3000))
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Fatalf("job %s still %s after %s", id, job.Status, jobTimeout)
}

// ranOn checks that the worker of a segment ran the job (its log line
// "job done" with the job id).
func (s *stack) ranOn(service, jobID string) {
	s.t.Helper()
	s.ranOnContainer(s.container(service), jobID)
}

func (s *stack) ranOnContainer(name, jobID string) {
	s.t.Helper()
	// The worker logs "job done" after it published the final state the
	// API stored: the line may trail the job's success by a moment.
	var done string
	testutil.WaitFor(s.t, 30*time.Second, name+` logs "job done" for `+jobID, func() bool {
		out, _ := exec.Command("podman", "logs", name).CombinedOutput()
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if l := sc.Text(); strings.Contains(l, "job done") && strings.Contains(l, "job_id="+jobID) {
				done = l
				return true
			}
		}
		time.Sleep(250 * time.Millisecond) // podman logs is not free
		return false
	})
	if !strings.Contains(done, "status=success") {
		s.t.Fatalf("%s: %s", name, done)
	}
}

// forward listens on the gateway address (a free port) and copies every
// connection to target: the containers' way to a test host. At the end of
// the test the listener and every open connection (the worker's pooled SSH
// connections stay open) are closed.
func forward(t *testing.T, gateway, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(gateway, "0"))
	if err != nil {
		t.Fatalf("forwarder on the compose network's gateway %s: %v", gateway, err)
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
		wg    sync.WaitGroup
	)
	track := func(c net.Conn, on bool) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				track(c, true)
				defer func() { track(c, false); c.Close() }()
				u, err := net.DialTimeout("tcp", target, 10*time.Second)
				if err != nil {
					return
				}
				track(u, true)
				defer func() { track(u, false); u.Close() }()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if strings.TrimSpace(x) == strings.TrimSpace(v) {
			return true
		}
	}
	return false
}

func tailOf(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
