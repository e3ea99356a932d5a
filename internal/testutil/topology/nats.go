package topology

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NATSNode is one nats-server of the cluster.
type NATSNode struct {
	*Proc
	ClientPort  int
	ClusterPort int
	MonitorPort int
	StoreDir    string
}

// URL is the node's client URL.
func (n *NATSNode) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.ClientPort) }

// Healthy reports whether the node answers /healthz (JetStream included).
func (n *NATSNode) Healthy() bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.MonitorPort))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startNATS writes the configuration of an n-node JetStream cluster under
// dir/nats and starts every node; it waits until each answers /healthz.
func startNATS(t testing.TB, dir string, n int) []*NATSNode {
	t.Helper()
	bin := natsServerBinary(t)
	nodes := make([]*NATSNode, n)
	for i := range nodes {
		nodes[i] = &NATSNode{ClientPort: freePort(t), ClusterPort: freePort(t), MonitorPort: freePort(t)}
	}
	for i, node := range nodes {
		name := fmt.Sprintf("nats-%d", i+1)
		node.StoreDir = filepath.Join(dir, "nats", name)
		if err := os.MkdirAll(node.StoreDir, 0o755); err != nil {
			t.Fatal(err)
		}
		var routes []string
		for j, o := range nodes {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", o.ClusterPort))
			}
		}
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
# A job's output chunk is at most 256 KiB; a refresh's final state carries
# the gzipped inventory.
max_payload: 8MB
jetstream {
  store_dir: %q
  max_memory_store: 256MB
  max_file_store: 8GB
}
cluster {
  name: lcm-test
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, name, node.ClientPort, node.MonitorPort, node.StoreDir, node.ClusterPort, strings.Join(routes, ", "))
		cfg := filepath.Join(dir, "nats", name+".conf")
		if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		node.Proc = newProc(t, dir, name, bin, []string{"-c", cfg}, nil)
		node.Start()
	}
	t.Cleanup(func() {
		for _, node := range nodes {
			node.Stop()
		}
	})
	for _, node := range nodes {
		waitNode(t, node)
	}
	waitCluster(t, nodes)
	return nodes
}

// waitCluster waits until a running node's JetStream meta group has a
// leader and sees every other running node as a current peer: only then
// can replicated streams be placed.
func waitCluster(t testing.TB, nodes []*NATSNode) {
	t.Helper()
	running := 0
	for _, n := range nodes {
		if n.Running() {
			running++
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, n := range nodes {
			if n.Running() && n.metaReady(running) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the NATS cluster did not form within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metaReady reports whether the node sees a meta leader and want-1
// current, online peers.
func (n *NATSNode) metaReady(want int) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz", n.MonitorPort))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var js struct {
		Meta *struct {
			Leader   string `json:"leader"`
			Replicas []struct {
				Current bool `json:"current"`
				Offline bool `json:"offline"`
			} `json:"replicas"`
		} `json:"meta_cluster"`
	}
	if json.NewDecoder(resp.Body).Decode(&js) != nil || js.Meta == nil || js.Meta.Leader == "" {
		return false
	}
	current := 0
	for _, r := range js.Meta.Replicas {
		if r.Current && !r.Offline {
			current++
		}
	}
	return current >= want-1
}

// WaitCluster waits until the running nodes form a JetStream cluster
// again (after restarts).
func (top *Topology) WaitCluster() {
	top.t.Helper()
	waitCluster(top.t, top.NATS)
}

func waitNode(t testing.TB, node *NATSNode) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !node.Healthy() {
		if !node.Running() {
			t.Fatalf("%s exited: %s", node.Name, node.Tail(2000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy after 60 s: %s", node.Name, node.Tail(2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Restart starts a stopped node again and waits until it is healthy.
func (n *NATSNode) Restart(t testing.TB) {
	t.Helper()
	n.Start()
	waitNode(t, n)
}

// WaitHealthy waits until the node answers /healthz.
func (n *NATSNode) WaitHealthy(t testing.TB) {
	t.Helper()
	waitNode(t, n)
}

// natsURLs is every node's URL, comma-separated (nats.go tries them all).
func natsURLs(nodes []*NATSNode) string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// StreamInfo is what a node's monitor says of a stream's cluster.
type StreamInfo struct {
	Leader   string
	Replicas []string // the followers
}

// Stream asks the nodes' monitors (/jsz) for a stream's leader and
// followers; ok is false when no running node knows the stream.
func (top *Topology) Stream(name string) (StreamInfo, bool) {
	for _, n := range top.NATS {
		if !n.Running() {
			continue
		}
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz?accounts=true&streams=true", n.MonitorPort))
		if err != nil {
			continue
		}
		var js struct {
			AccountDetails []struct {
				StreamDetail []struct {
					Name    string `json:"name"`
					Cluster struct {
						Leader   string `json:"leader"`
						Replicas []struct {
							Name string `json:"name"`
						} `json:"replicas"`
					} `json:"cluster"`
				} `json:"stream_detail"`
			} `json:"account_details"`
		}
		err = json.NewDecoder(resp.Body).Decode(&js)
		resp.Body.Close()
		if err != nil {
			continue
		}
		for _, a := range js.AccountDetails {
			for _, s := range a.StreamDetail {
				if s.Name != name || s.Cluster.Leader == "" {
					continue
				}
				info := StreamInfo{Leader: s.Cluster.Leader}
				for _, r := range s.Cluster.Replicas {
					info.Replicas = append(info.Replicas, r.Name)
				}
				return info, true
			}
		}
	}
	return StreamInfo{}, false
}

// Node returns the node of a server name ("nats-2").
func (top *Topology) Node(name string) *NATSNode {
	for _, n := range top.NATS {
		if n.Name == name {
			return n
		}
	}
	return nil
}
