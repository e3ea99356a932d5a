// Command agentsim measures an lcm-agentgw process under many simulated
// agents (make bench-agents; docs/benchmarks.md "Agent gateway"): it runs
// a NATS server with lcm-api's streams and buckets and the gateway's
// least-privilege account, starts the given lcm-agentgw binary against it,
// stores N enrolled agent credentials, connects N simulated agents from
// several loopback addresses, and reports the gateway's resident memory
// and the command → result round trip through it.
//
//	agentsim -gateway bin/lcm-agentgw -n 10000 -sources 8 -rtt 2000
//
// Raise the open-file limit first (ulimit -n 20000): each agent is one
// socket in this process and one in the gateway.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lcmproject/lcm/internal/agentgw"
	"github.com/lcmproject/lcm/internal/agentsim"
	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/tlscert"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "agentsim:", err)
		os.Exit(1)
	}
}

type options struct {
	gateway        string
	n, sources     int
	rtt, par       int
	rssBudgetMiB   int
	rttBudget      time.Duration
	settle         time.Duration
	natsPort, port int
}

func run() error {
	var o options
	flag.StringVar(&o.gateway, "gateway", "bin/lcm-agentgw", "lcm-agentgw binary to measure")
	flag.IntVar(&o.n, "n", 10000, "simulated agents")
	flag.IntVar(&o.sources, "sources", 8, "loopback source addresses 127.0.0.1 … 127.0.0.<sources>")
	flag.IntVar(&o.rtt, "rtt", 2000, "command round trips to time (one at a time, random agents)")
	flag.IntVar(&o.par, "par", 64, "connections opened in parallel")
	flag.IntVar(&o.rssBudgetMiB, "rss-budget", 1024, "budget of the gateway's RSS with all agents connected, MiB")
	flag.DurationVar(&o.rttBudget, "rtt-budget", 50*time.Millisecond, "budget of the p99 round trip")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "how long RSS is sampled after all agents connected")
	flag.IntVar(&o.natsPort, "nats-port", 14222, "loopback port of the NATS server")
	flag.IntVar(&o.port, "port", 19320, "loopback port of the gateway")
	flag.Parse()
	raiseFileLimit()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentsim-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// NATS as lcm-api runs it when it listens, with the gateway's account.
	certPEM, keyPEM, err := tlscert.Generate("127.0.0.1")
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		return err
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, []byte(certPEM), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, []byte(keyPEM), 0o600); err != nil {
		return err
	}
	natsAddr := "127.0.0.1:" + strconv.Itoa(o.natsPort)
	b, err := bus.Open(ctx, bus.Options{DataDir: dir, Listen: natsAddr, User: "api", Password: "api-pass", Logger: log,
		TLS:   &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		Users: []bus.User{bus.FullUser("api", "api-pass"), bus.AgentGatewayUser("agentgw", "agentgw-pass")}})
	if err != nil {
		return err
	}
	defer b.Close()
	creds, err := b.AgentCredentials(ctx)
	if err != nil {
		return err
	}

	// The gateway under test, its own process.
	gwAddr := "127.0.0.1:" + strconv.Itoa(o.port)
	gw := exec.Command(o.gateway, "-listen", gwAddr, "-tls-cert", certFile, "-tls-key", keyFile,
		"-nats-url", "tls://"+natsAddr, "-nats-user", "agentgw", "-nats-ca", certFile)
	gw.Env = append(os.Environ(), "LCM_NATS_PASSWORD=agentgw-pass")
	gwLog := &lineWatch{want: "lcm-agentgw started", seen: make(chan struct{})}
	gw.Stderr, gw.Stdout = gwLog, gwLog
	if err := gw.Start(); err != nil {
		return fmt.Errorf("start %s: %w", o.gateway, err)
	}
	defer func() { _ = gw.Process.Signal(os.Interrupt); _ = gw.Wait() }()
	select {
	case <-gwLog.seen:
	case <-time.After(30 * time.Second):
		return errors.New("the gateway did not start within 30 s:\n" + gwLog.String())
	}
	fmt.Printf("gateway pid %d, %s; RSS at start %d MiB\n", gw.Process.Pid, gwAddr, rssMiB(gw.Process.Pid, "VmRSS"))

	// N enrolled agents, stored as the gateway reads them.
	agents := make([]agentsim.Agent, o.n)
	start := time.Now()
	if err := parallel(64, o.n, func(i int) error {
		secret, err := agentproto.NewSecret()
		if err != nil {
			return err
		}
		id := agentproto.NewID()
		now := time.Now().UTC()
		rec, _ := json.Marshal(agentgw.Credential{SecretSHA256: agentproto.SecretHash(secret), ServerID: "sim-" + strconv.Itoa(i),
			Enrolled: true, CreatedAt: now, EnrolledAt: &now})
		agents[i] = agentsim.Agent{ID: id, Secret: secret}
		return creds.Create(ctx, id, rec)
	}); err != nil {
		return err
	}
	fmt.Printf("%d credentials stored in %s\n", o.n, time.Since(start).Round(time.Millisecond))

	var sources []string
	for i := 1; i <= o.sources; i++ {
		sources = append(sources, "127.0.0."+strconv.Itoa(i))
	}
	so := &agentsim.Options{URL: "wss://" + gwAddr + "/mqtt", Fingerprint: agentproto.FingerprintSHA256(pair.Certificate[0]),
		Sources: sources, Respond: func(_ context.Context, c *agentproto.Command, stdout, _ io.Writer) int {
			_, _ = io.WriteString(stdout, "ok\n")
			return 0
		}}
	start = time.Now()
	f, err := agentsim.ConnectAll(ctx, so, agents, o.par)
	if err != nil {
		return fmt.Errorf("connect: %w\ngateway log:\n%s", err, gwLog.String())
	}
	defer f.Close()
	fmt.Printf("%d agents connected in %s from %d source addresses\n", o.n, time.Since(start).Round(time.Millisecond), o.sources)

	// Idle memory: the highest RSS sampled over the settle period.
	var peak int
	for end := time.Now().Add(o.settle); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		peak = max(peak, rssMiB(gw.Process.Pid, "VmRSS"))
	}
	hwm := rssMiB(gw.Process.Pid, "VmHWM")
	fmt.Printf("gateway RSS with %d idle agents: %d MiB (highest sample over %s), peak since start (VmHWM) %d MiB — budget %d MiB: %s\n",
		o.n, peak, o.settle, hwm, o.rssBudgetMiB, verdict(peak <= o.rssBudgetMiB))

	// Round trips, one at a time, through the gateway with all connected.
	lat := make([]time.Duration, 0, o.rtt)
	for i := 0; i < o.rtt; i++ {
		a := agents[rand.IntN(len(agents))]
		t0 := time.Now()
		res, err := agentgw.NewExecutor(b, a.ID).Run(ctx, remote.Command{Cmd: "true", Stdout: io.Discard})
		if err != nil || res.ExitCode != 0 {
			return fmt.Errorf("round trip %d to %s: %v %+v", i, a.ID, err, res)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[int(float64(len(lat)-1)*q)].Round(10 * time.Microsecond) }
	fmt.Printf("command → result round trip with %d connected (%d samples): p50 %s, p99 %s, max %s — budget p99 %s: %s\n",
		o.n, len(lat), p(0.5), p(0.99), lat[len(lat)-1].Round(10*time.Microsecond), o.rttBudget, verdict(p(0.99) <= o.rttBudget))
	dropped := 0
	for _, c := range f.Conns {
		select {
		case <-c.Done():
			dropped++
		default:
		}
	}
	fmt.Printf("agents dropped during the run: %d; gateway RSS at the end %d MiB\n", dropped, rssMiB(gw.Process.Pid, "VmRSS"))
	if dropped > 0 {
		return fmt.Errorf("%d agents were disconnected\ngateway log:\n%s", dropped, gwLog.String())
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

// parallel runs fn(0..n-1) on par goroutines; the first error wins.
func parallel(par, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := fn(int(i)); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// rssMiB reads a Vm* line of /proc/<pid>/status in MiB.
func rssMiB(pid int, field string) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb / 1024
		}
	}
	return -1
}

// raiseFileLimit lifts the soft open-file limit to the hard one (the
// gateway inherits it).
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// lineWatch keeps the gateway's log and closes seen at the first write
// containing want.
type lineWatch struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() < 1<<20 {
		w.buf.Write(p)
	}
	select {
	case <-w.seen:
	default:
		if strings.Contains(w.buf.String(), w.want) {
			w.once.Do(func() { close(w.seen) })
		}
	}
	return len(p), nil
}

func (w *lineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
