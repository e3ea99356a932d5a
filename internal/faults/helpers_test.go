//go:build faults

package faults

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// full reports whether the suite runs at its full sizes (make faults).
func full() bool { return os.Getenv("LCM_FAULTS") == "full" }

// size picks the short (CI) or full (make faults) size of a fault run.
func size(short, fullSize int) int {
	if full() {
		return fullSize
	}
	return short
}

// jobStarted is the answer of every job-starting route.
type jobStarted struct {
	JobID string `json:"job_id"`
}

// submit starts a connectivity check on a server through the proxy and
// returns its job id ("" and the answer when refused).
func submit(top *topology.Topology, token, serverID, kind string) (string, topology.Response) {
	var js jobStarted
	r := top.Do("POST", "/api/v1/servers/"+serverID+"/"+kind, token, nil, &js)
	if r.Err != nil || r.Code != 202 {
		return "", r
	}
	return js.JobID, r
}

// countStatuses sums job statuses.
func countStatuses(st map[string]string) string {
	n := map[string]int{}
	for _, s := range st {
		n[s]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

// logLines counts the lines of the replicas' logs that contain s.
func logLines(top *topology.Topology, s string) int {
	n := 0
	for _, r := range top.APIs {
		b, err := os.ReadFile(r.Log)
		if err != nil {
			continue
		}
		n += strings.Count(string(b), s)
	}
	return n
}

// figure logs a result line in a fixed form, collected for the docs.
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log("FIGURE " + line)
	if p := os.Getenv("LCM_FAULTS_FIGURES"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %s: %s\n", time.Now().UTC().Format(time.RFC3339), t.Name(), line)
			f.Close()
		}
	}
}

// cpuSeconds is the CPU time (user + system) a process used so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	var u, k float64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &k)
	return (u + k) / 100 // USER_HZ
}

// cpuMeter sums the CPU time of the topology's processes (and this test
// process, the load generator) between two readings.
type cpuMeter struct {
	top   *topology.Topology
	start map[string]float64
}

func (m *cpuMeter) read() map[string]float64 {
	out := map[string]float64{"load generator": cpuSeconds(os.Getpid())}
	for _, r := range m.top.APIs {
		out["lcm-api"] += cpuSeconds(r.PID())
	}
	for _, n := range m.top.NATS {
		out["nats-server"] += cpuSeconds(n.PID())
	}
	for _, w := range m.top.Workers {
		out["lcm-worker"] += cpuSeconds(w.PID())
	}
	out["nginx"] = cpuSeconds(m.top.Nginx.PID()) // the master; its worker below
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", m.top.Nginx.PID(), m.top.Nginx.PID())); err == nil {
		for _, c := range strings.Fields(string(b)) {
			var pid int
			fmt.Sscan(c, &pid)
			out["nginx"] += cpuSeconds(pid)
		}
	}
	return out
}

func newCPUMeter(top *topology.Topology) *cpuMeter {
	m := &cpuMeter{top: top}
	m.start = m.read()
	return m
}

// since is CPU seconds per process kind since the meter started.
func (m *cpuMeter) since() string {
	now := m.read()
	keys := make([]string, 0, len(now))
	for k := range now {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.1f s", k, now[k]-m.start[k]))
	}
	return strings.Join(parts, ", ")
}
