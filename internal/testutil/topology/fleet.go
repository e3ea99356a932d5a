package topology

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite" // database/sql driver "sqlite" (SQLite mode)

	"github.com/lcmproject/lcm/internal/testutil"
)

// SimHost is one cmd/fleetsim host.
type SimHost struct {
	Index       int    `json:"index"`
	Addr        string `json:"addr"`
	HostKey     string `json:"host_key"`
	Fingerprint string `json:"fingerprint"`
}

// StartFleet runs cmd/fleetsim with n simulated Debian hosts (args are
// extra flags, e.g. "-latency", "50ms") and returns them; it stops when the
// test ends.
func (top *Topology) StartFleet(n int, args ...string) []SimHost {
	top.t.Helper()
	return StartFleetsim(top.t, filepath.Join(top.Dir, "logs"), n, args...)
}

// StartFleetsim runs cmd/fleetsim with n hosts, its log in logDir, until
// the test ends (StartFleet without a topology).
func StartFleetsim(t testing.TB, logDir string, n int, args ...string) []SimHost {
	t.Helper()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := lcmBinary(t, "fleetsim")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"-n", strconv.Itoa(n)}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	logf, err := os.Create(filepath.Join(logDir, fmt.Sprintf("fleetsim-%d.log", time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait(); logf.Close() })
	var hosts []SimHost
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for len(hosts) < n && sc.Scan() {
		var h SimHost
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("fleetsim line %q: %v", sc.Text(), err)
		}
		hosts = append(hosts, h)
	}
	if len(hosts) != n {
		t.Fatalf("fleetsim printed %d of %d hosts", len(hosts), n)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return hosts
}

// Onboard joins hosts through the proxy (bootstrap user "debian" with a
// password, the host key fleetsim printed) into segment and waits until
// every join succeeded; it returns the server ids in host order.
func (top *Topology) Onboard(token, segment string, hosts []SimHost) []string {
	top.t.Helper()
	join := func(i int) (string, string, error) {
		h := hosts[i]
		host, port, _ := net.SplitHostPort(h.Addr)
		p, _ := strconv.Atoi(port)
		var joined struct {
			JobID  string `json:"job_id"`
			Server struct {
				ID string `json:"id"`
			} `json:"server"`
		}
		var r Response
		for attempt := 0; attempt < 5; attempt++ {
			r = top.Do("POST", "/api/v1/servers/join", token, map[string]any{
				"name": fmt.Sprintf("%s-sim-%d", segment, h.Index), "host": host, "port": p, "username": "debian", "auth": "password",
				"password": "bootstrap-secret", "host_key": h.HostKey, "segment": segment,
			}, &joined)
			if r.Err == nil && r.Code != http.StatusServiceUnavailable && r.Code != http.StatusBadGateway {
				break
			}
			time.Sleep(time.Second)
		}
		if r.Err != nil || r.Code != http.StatusAccepted {
			return "", "", fmt.Errorf("join %s: %d %v %.300s", h.Addr, r.Code, r.Err, r.Body)
		}
		return joined.Server.ID, joined.JobID, nil
	}
	ids, jobs := testutil.JoinAll(top.t, len(hosts), 16, join)
	top.WaitJobs(jobs, 10*time.Minute, "success")
	return ids
}

// DB is a connection pool to the test database, direct (the server's own
// truth: what the tests read back).
func (top *Topology) DB() *sql.DB { return top.db() }

// JobStatuses returns the stored status of each job id (missing ids are
// absent).
func (top *Topology) JobStatuses(ids []string) map[string]string {
	top.t.Helper()
	db := top.db()
	out := make(map[string]string, len(ids))
	for lo := 0; lo < len(ids); lo += 500 {
		batch := ids[lo:min(lo+500, len(ids))]
		args := make([]any, len(batch))
		marks := make([]string, len(batch))
		for i, id := range batch {
			args[i] = id
			marks[i] = top.placeholder(i + 1)
		}
		rows, err := db.QueryContext(context.Background(), "SELECT id, status FROM jobs WHERE id IN ("+strings.Join(marks, ",")+")", args...)
		if err != nil {
			top.t.Fatal(err)
		}
		for rows.Next() {
			var id, st string
			if err := rows.Scan(&id, &st); err != nil {
				top.t.Fatal(err)
			}
			out[id] = st
		}
		rows.Close()
	}
	return out
}

// placeholder is the i-th query parameter in the database's syntax.
func (top *Topology) placeholder(i int) string {
	if top.opts.SQLite {
		return "?"
	}
	return "$" + strconv.Itoa(i)
}

// WaitJobs waits until every job is final and fails unless each has one
// of the wanted statuses (any final status when none is given).
func (top *Topology) WaitJobs(ids []string, timeout time.Duration, want ...string) map[string]string {
	top.t.Helper()
	final := map[string]bool{"success": true, "failed": true, "aborted": true}
	deadline := time.Now().Add(timeout)
	for {
		st := top.JobStatuses(ids)
		left := 0
		for _, id := range ids {
			if !final[st[id]] {
				left++
			}
		}
		if left == 0 {
			if len(want) > 0 {
				ok := map[string]bool{}
				for _, w := range want {
					ok[w] = true
				}
				for _, id := range ids {
					if !ok[st[id]] {
						top.t.Fatalf("job %s ended %s (want %v): %s", id, st[id], want, top.jobError(id))
					}
				}
			}
			return st
		}
		if time.Now().After(deadline) {
			top.t.Fatalf("%d of %d jobs not final after %s", left, len(ids), timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (top *Topology) jobError(id string) string {
	var e string
	_ = top.db().QueryRowContext(context.Background(), "SELECT error FROM jobs WHERE id = "+top.placeholder(1), id).Scan(&e)
	return e
}

var (
	dbMu    sync.Mutex
	dbConns = map[string]*sql.DB{}
)

// db is a shared connection pool to the test database (read-only on
// the replica's SQLite file in SQLite mode).
func (top *Topology) db() *sql.DB {
	key := top.PGURL
	if top.opts.SQLite {
		key = filepath.Join(top.APIs[0].DataDir(), "lcm.db")
	}
	dbMu.Lock()
	defer dbMu.Unlock()
	if db, ok := dbConns[key]; ok {
		return db
	}
	var db *sql.DB
	var err error
	if top.opts.SQLite {
		db, err = sql.Open("sqlite", "file:"+key+"?mode=ro&_pragma=busy_timeout(5000)")
	} else {
		db, err = sql.Open("pgx", top.PGURL)
	}
	if err != nil {
		top.t.Fatal(err)
	}
	db.SetMaxOpenConns(4)
	dbConns[key] = db
	top.t.Cleanup(func() {
		dbMu.Lock()
		defer dbMu.Unlock()
		db.Close()
		delete(dbConns, key)
	})
	return db
}

// WaitProxyUp waits until the proxy answers health (after restarts).
func (top *Topology) WaitProxyUp(timeout time.Duration) {
	top.t.Helper()
	testutil.WaitFor(top.t, timeout, "the proxy answers health", func() bool {
		r := top.Do("GET", "/api/v1/health", "", nil, nil)
		return r.Err == nil && r.Code == http.StatusOK
	})
}
