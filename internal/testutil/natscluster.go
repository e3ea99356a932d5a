package testutil

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NATSCluster is a JetStream cluster of real nats-server processes on
// loopback ports, each with its own store directory.
type NATSCluster struct {
	Nodes []*NATSNode
	dir   string
}

// NATSNode is one nats-server process of a NATSCluster.
type NATSNode struct {
	Name       string
	ClientURL  string // nats://127.0.0.1:port
	HealthURL  string // http://127.0.0.1:port/healthz
	conf, logf string
	bin        string
	cmd        *exec.Cmd
	done       chan struct{}
}

// NATSServerBin is the nats-server binary the cluster runs:
// LCM_NATS_SERVER_BIN, else nats-server on PATH (Debian's package installs
// /usr/sbin/nats-server), else the test is unavailable.
func NATSServerBin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LCM_NATS_SERVER_BIN"); p != "" {
		return p
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server"
	}
	Unavailable(t, "nats-server not found (apt-get install nats-server, or set LCM_NATS_SERVER_BIN)")
	return ""
}

// StartNATSCluster starts n nats-server processes forming one JetStream
// cluster. authConf, when not empty, is included into every node's
// configuration (an authorization block). The processes are stopped at the
// end of the test; their logs are printed when it failed.
func StartNATSCluster(t testing.TB, n int, authConf []byte) *NATSCluster {
	t.Helper()
	bin := NATSServerBin(t)
	dir := t.TempDir()
	if len(authConf) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "auth.conf"), authConf, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ports := make([][3]int, n) // client, cluster, monitoring
	var routes []string
	for i := range ports {
		ports[i] = [3]int{FreePort(t), FreePort(t), FreePort(t)}
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i][1]))
	}
	c := &NATSCluster{dir: dir}
	for i, p := range ports {
		name := fmt.Sprintf("n%d", i+1)
		node := &NATSNode{Name: name, bin: bin,
			ClientURL: fmt.Sprintf("nats://127.0.0.1:%d", p[0]), HealthURL: fmt.Sprintf("http://127.0.0.1:%d/healthz", p[2]),
			conf: filepath.Join(dir, name+".conf"), logf: filepath.Join(dir, name+".log")}
		var b bytes.Buffer
		fmt.Fprintf(&b, "server_name: %s\nlisten: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\n", name, p[0], p[2])
		fmt.Fprintf(&b, "jetstream { store_dir: %q }\n", filepath.Join(dir, name))
		fmt.Fprintf(&b, "cluster { name: lcm-test, listen: \"127.0.0.1:%d\", routes: [%s] }\n", p[1], quoteAll(routes))
		if len(authConf) > 0 {
			b.WriteString("include ./auth.conf\n")
		}
		if err := os.WriteFile(node.conf, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		node.Start(t)
	}
	t.Cleanup(func() {
		for _, node := range c.Nodes {
			node.Stop(t)
		}
		if t.Failed() {
			for _, node := range c.Nodes {
				if b, err := os.ReadFile(node.logf); err == nil {
					t.Logf("--- %s log (last 4 KiB) ---\n%s", node.Name, tail(b, 4096))
				}
			}
		}
	})
	for _, node := range c.Nodes {
		node.WaitHealthy(t, 30*time.Second)
	}
	return c
}

// SetAuth replaces the authorization block every node includes and makes
// the running nodes reload it (SIGHUP). The cluster must have been started
// with an authorization block.
func (c *NATSCluster) SetAuth(t testing.TB, authConf []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "auth.conf"), authConf, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if n.cmd != nil {
			if err := n.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatalf("reload %s: %v", n.Name, err)
			}
		}
	}
}

// URLs is the comma-separated client URL list of every node.
func (c *NATSCluster) URLs() string {
	var u []string
	for _, n := range c.Nodes {
		u = append(u, n.ClientURL)
	}
	return strings.Join(u, ",")
}

// Start starts (or restarts) the node's process.
func (n *NATSNode) Start(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(n.logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(n.bin, "-c", n.conf)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", n.Name, err)
	}
	n.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); logf.Close(); close(done) }(n.cmd, n.done)
}

// Stop ends the node's process (SIGTERM, then SIGKILL after 10 s) and
// waits for it. A stopped node stays stopped.
func (n *NATSNode) Stop(t testing.TB) {
	t.Helper()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	n.cmd = nil
}

// WaitHealthy waits until the node's monitoring endpoint answers 200 to
// /healthz (client port open; with JetStream, the node caught up).
func (n *NATSNode) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	WaitFor(t, timeout, n.Name+" healthy ("+n.HealthURL+")", func() bool {
		resp, err := client.Get(n.HealthURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
