package fleet_test

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// BenchmarkHardenSSHPooled: one harden-ssh job end to end (submit, worker
// on a pooled connection, drop-in written and checked with sshd -t, sshd
// reloaded, sshd -T read back, a fresh key login, the finish hook) on
// test host 12, the host of this package's hardening tests. Between two
// iterations an unharden job (not timed) puts the host back. Budget
// (issue 13): ≤ 2 s.
//
//	go test -run '^$' -bench HardenSSHPooled -benchtime 5x ./internal/fleet
func BenchmarkHardenSSHPooled(b *testing.B) {
	h := testutil.TestHostAt(b, 12)
	testutil.LockTestHost(b, h)
	testutil.ResetTestHost(b, h)
	b.Cleanup(func() { testutil.ResetTestHost(b, h) })
	p := plane.Start(b, plane.Options{})
	ctx := context.Background()
	pr, err := p.Fleet.Probe(ctx, h.Host, h.Port)
	if err != nil {
		b.Fatal(err)
	}
	srv, job, err := p.Fleet.Join(ctx, p.Admin, fleet.JoinRequest{Name: "bench-harden", Host: h.Host, Port: h.Port,
		Username: "root", Auth: domain.AuthKey, PrivateKey: string(h.PrivateKey), HostKey: pr.HostKey})
	if err != nil {
		b.Fatal(err)
	}
	if done := p.WaitJob(b, job.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		b.Fatalf("join %s: %s", done.Status, done.Error)
	}
	// A first job warms the worker's connection pool.
	if j, err := p.Fleet.CheckConnectivity(ctx, p.Admin, srv.ID); err != nil {
		b.Fatal(err)
	} else if done := p.WaitJob(b, j.ID, time.Minute); done.Status != domain.JobSuccess {
		b.Fatalf("warm-up %s: %s", done.Status, done.Error)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		j, err := p.Fleet.HardenSSH(ctx, p.Admin, srv.ID, false)
		if err != nil {
			b.Fatal(err)
		}
		if done := p.WaitJob(b, j.ID, time.Minute); done.Status != domain.JobSuccess {
			b.Fatalf("harden %s: %s", done.Status, done.Error)
		}
		b.ReportMetric(time.Since(start).Seconds(), "harden-s")
		b.StopTimer()
		j, err = p.Fleet.UnhardenSSH(ctx, p.Admin, srv.ID)
		if err != nil {
			b.Fatal(err)
		}
		if done := p.WaitJob(b, j.ID, time.Minute); done.Status != domain.JobSuccess {
			b.Fatalf("unharden %s: %s", done.Status, done.Error)
		}
		b.StartTimer()
	}
}

// simSSHD answers the commands of harden-ssh like a Debian 12 sshd with a
// main sshd_config that includes the drop-in directory: LCM's drop-in is
// kept per simulated server, sshd -T reports passwordauthentication from
// it. Everything else (sudo -n true, the fresh login) is fleetsim's.
func simSSHD(t *fleetsim.Table) {
	var dropIns sync.Map // *fleetsim.Instance → drop-in content
	const mainConfig = "Include /etc/ssh/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\nUsePAM yes\nX11Forwarding yes\nPrintMotd no\nAcceptEnv LANG LC_*\nSubsystem sftp /usr/lib/openssh/sftp-server\n"
	say := func(r *fleetsim.Request, s string) { _, _ = io.WriteString(r.Stdout, s) }
	arg := func(r *fleetsim.Request, i int) string {
		if i < len(r.Argv) {
			return r.Argv[i]
		}
		return ""
	}
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, `echo "$SSH_CONNECTION"`) }, func(_ context.Context, r *fleetsim.Request) int {
		say(r, "198.18.0.1 50022 198.18.0.2 22\n")
		return 0
	})
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "echo present; cat") }, func(_ context.Context, r *fleetsim.Request) int {
		switch p := arg(r, 1); {
		case p == "/etc/ssh/sshd_config":
			say(r, "present\n"+mainConfig)
		case strings.HasPrefix(p, "/etc/ssh/sshd_config.d/"):
			if v, ok := dropIns.Load(r.Instance); ok && strings.HasSuffix(p, "60-lcm-hardening.conf") {
				say(r, "present\n"+v.(string))
			} else {
				say(r, "absent\n")
			}
		default:
			say(r, "absent\n")
		}
		return 0
	})
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "sshd -t refused") }, func(_ context.Context, r *fleetsim.Request) int {
		p, mode := arg(r, 1), arg(r, 2)
		if !strings.HasSuffix(p, "60-lcm-hardening.conf") {
			return 0
		}
		if mode == "absent" {
			dropIns.Delete(r.Instance)
			say(r, "lcm: removed "+p+" (sshd -t ok)\n")
			return 0
		}
		b, err := base64.StdEncoding.DecodeString(arg(r, 3))
		if err != nil {
			return 2
		}
		dropIns.Store(r.Instance, string(b))
		say(r, "lcm: wrote "+p+" (sshd -t ok)\n")
		return 0
	})
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "kill -HUP") && strings.Contains(cmd, "sshd.pid") }, func(_ context.Context, r *fleetsim.Request) int {
		say(r, "lcm: sent SIGHUP to sshd (pid 612)\n")
		return 0
	})
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "sshd -T -C") }, func(_ context.Context, r *fleetsim.Request) int {
		pw := "yes"
		if v, ok := dropIns.Load(r.Instance); ok && strings.Contains(v.(string), "\nPasswordAuthentication no\n") {
			pw = "no"
		}
		say(r, "port 22\naddressfamily any\npermitrootlogin prohibit-password\npubkeyauthentication yes\npasswordauthentication "+pw+
			"\nkbdinteractiveauthentication no\npermitemptypasswords no\nmaxauthtries 4\nx11forwarding no\n")
		return 0
	})
}

// BenchmarkHarden1000: harden-ssh on LCM_BENCH_SERVERS simulated Debian 12
// servers (default 1,000), submitted through the fleet service's HardenSSH
// (what POST /servers/{id}/harden-ssh calls, 16 submits at a time), one
// worker with 64 jobs in flight (lcm-api's default), the finish hooks
// storing each proof; wall time from the first submit until every server
// reads back ssh_hardened. Every job runs the whole proof: sudo mode,
// SSH_CONNECTION, both files read, the drop-in written (sshd -t), reload,
// sshd -T read back, a fresh login on a new connection. Budget (issue
// 13): ≤ 20 s.
//
//	go test -run '^$' -bench Harden1000 -benchtime 1x ./internal/fleet
func BenchmarkHarden1000(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		n = v
	}
	table := fleetsim.DebianTable(fleetsim.DebianOptions{})
	simSSHD(table)
	f, err := fleetsim.Start(fleetsim.Config{N: n, Responders: table})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := plane.Start(b, plane.Options{Concurrency: 64})
	ids := make([]string, 0, n)
	for _, inst := range f.Instances {
		key, err := actions.NewManagementKey("bench")
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, p.AddServer(b, inst.Hostname, inst.Addr, inst.AuthorizedHostKey(), key).ID)
	}
	ctx := context.Background()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		start := time.Now()
		// Submitted as an API client would: 16 requests in flight.
		jobIDs := make([]string, n)
		errs := make(chan error, n)
		next := make(chan int)
		var wg sync.WaitGroup
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					j, err := p.Fleet.HardenSSH(ctx, p.Admin, ids[i], false)
					if err != nil {
						errs <- err
						continue
					}
					jobIDs[i] = j.ID
				}
			}()
		}
		for i := range ids {
			next <- i
		}
		close(next)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		submitted := time.Since(start)
		for i, jid := range jobIDs {
			if done := p.WaitJob(b, jid, 5*time.Minute); done.Status != domain.JobSuccess {
				b.Fatalf("server %d: harden %s: %s", i, done.Status, done.Error)
			}
		}
		hardened := 0
		for _, id := range ids {
			if s, err := p.Fleet.Get(ctx, p.Admin, id); err == nil && s.SSHHardened {
				hardened++
			}
		}
		wall := time.Since(start)
		if hardened != n {
			b.Fatalf("%d of %d servers read back hardened", hardened, n)
		}
		b.Logf("harden-ssh on %d simulated servers: wall %.1f s (submitted in %.2f s)", n, wall.Seconds(), submitted.Seconds())
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(submitted.Seconds(), "submit-s")
		if it+1 < b.N {
			b.StopTimer()
			for _, id := range ids {
				j, err := p.Fleet.UnhardenSSH(ctx, p.Admin, id)
				if err != nil {
					b.Fatal(err)
				}
				p.WaitJob(b, j.ID, 5*time.Minute)
			}
			b.StartTimer()
		}
	}
}
