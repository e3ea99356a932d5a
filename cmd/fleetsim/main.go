// Command fleetsim runs a simulated fleet of Debian 12 hosts (see
// internal/fleetsim, DebianTable) for benchmarks, load tests and demos, and
// prints one JSON object per line: {"index","addr","host_key","fingerprint"}.
// The hosts answer everything LCM runs — probe, join and its proof, facts,
// inventory, package actions, reboot — so they can be onboarded through the
// API like real servers: join them with any bootstrap user (any password or
// key is accepted) and the pinned host key from the probe. With -pristine
// (the default) the management user lcm exists only after the join and
// logs in only with the key the join installed.
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
	fs.BoolVar(&cfg.Pristine, "pristine", true, "hosts start unjoined: user lcm exists only after LCM's join, with the key it installed")
	fs.DurationVar(&cfg.RebootDowntime, "reboot-downtime", 2*time.Second, "how long a rebooting host refuses SSH")
	var o fleetsim.DebianOptions
	fs.IntVar(&o.Upgradable, "upgradable", 40, "packages apt lists as upgradable")
	fs.IntVar(&o.Security, "security", 12, "of them from bookworm-security")
	fs.DurationVar(&o.UpgradeTime, "upgrade-time", 0, "duration of the security upgrade script (0: -latency)")
	fs.BoolVar(&o.KeepPending, "keep-pending", false, "upgrades succeed but change nothing, so repeated runs do the same work (benchmark rounds)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Responders = fleetsim.DebianTable(o)
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
