// Command fleetsim runs a simulated fleet of Debian hosts (see
// internal/fleetsim) for benchmarks, load tests and demos, and prints one
// JSON object per line: {"index","addr","host_key","fingerprint"}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lcmproject/lcm/internal/fleetsim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleetsim:", err)
		os.Exit(1)
	}
}

// instanceLine is one line of the output.
type instanceLine struct {
	Index       int    `json:"index"`
	Addr        string `json:"addr"`
	HostKey     string `json:"host_key"`
	Fingerprint string `json:"fingerprint"`
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleetsim", flag.ContinueOnError)
	var cfg fleetsim.Config
	fs.IntVar(&cfg.N, "n", 10, "number of simulated hosts")
	fs.IntVar(&cfg.BasePort, "base-port", 0, "host i listens on base-port+i (0: free ports)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1", "IP to listen on")
	fs.DurationVar(&cfg.Latency, "latency", time.Second, "duration of each command (sleep N takes N)")
	fs.IntVar(&cfg.OutputBytes, "output-bytes", 16<<10, "bytes of apt-like output per apt command")
	fs.Float64Var(&cfg.FailRate, "fail-rate", 0, "chance in [0,1] that an apt command fails with exit 100")
	fs.IntVar(&cfg.Packages, "packages", 400, "packages dpkg-query lists")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the host keys and failures")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.N > 900 {
		raiseNoFile(uint64(cfg.N)*3 + 256)
	}
	f, err := fleetsim.Start(cfg)
	if err != nil {
		return err
	}
	defer f.Close()
	enc := json.NewEncoder(stdout)
	for _, inst := range f.Instances {
		if err := enc.Encode(instanceLine{inst.Index, inst.Addr, inst.AuthorizedHostKey(), inst.Fingerprint}); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// raiseNoFile lifts the soft open-files limit toward want (one listener and
// up to two connections per host).
func raiseNoFile(want uint64) {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil || r.Cur >= want {
		return
	}
	r.Cur = min(want, r.Max)
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
}
