package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Hosts returns cfg.N simulated hosts that listen on nothing: commands
// reach them through Exec, as an agent simulator (internal/agentsim)
// relays them. They answer from the same responder table and keep the
// same per-host state as the SSH instances of Start. Close the fleet when
// done (it cancels running commands).
func Hosts(cfg Config) (*Fleet, error) {
	if cfg.N <= 0 {
		return nil, errors.New("fleetsim: N must be positive")
	}
	if cfg.Packages <= 0 {
		cfg.Packages = 400
	}
	f := &Fleet{cfg: cfg, table: cfg.Responders, conns: map[net.Conn]*Instance{}}
	if f.table == nil {
		f.table = DefaultTable()
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	for i := 0; i < cfg.N; i++ {
		signer := HostSigner(cfg.Seed, i)
		inst := &Instance{Index: i, Hostname: fmt.Sprintf("sim-%04d", i), HostKey: signer.PublicKey(),
			Fingerprint: ssh.FingerprintSHA256(signer.PublicKey()), fleet: f}
		inst.state = newHostState(cfg.Pristine)
		f.Instances = append(f.Instances, inst)
	}
	return f, nil
}

// Exec runs one command line on the host as root (lcm-agent's user) with
// sh's rules for the shapes LCM sends, and returns its exit code. sudo is
// the command envelope's flag (root needs no sudo).
func (i *Instance) Exec(ctx context.Context, line string, sudo bool, stdin io.Reader, stdout, stderr io.Writer) int {
	f := i.fleet
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(f.ctx, cancel)
	defer stop()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	n := i.execs.Add(1)
	req := &Request{Instance: i, Config: &f.cfg, User: "root", Sudo: sudo, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Rand: rand.New(rand.NewPCG(uint64(f.cfg.Seed), uint64(n)<<20|uint64(i.Index)))}
	i.onExec(line, sudo)
	return i.run(ctx, req, line, sudo)
}
