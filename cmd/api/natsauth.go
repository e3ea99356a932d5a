package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/lcmproject/lcm/internal/bus"
)

const natsAuthUsage = `usage: lcm-api nats-auth [-api USER=FILE] [-worker USER:SEGMENT[,SEGMENT]=FILE]... [-agentgw USER=FILE]... [-scanner USER=FILE]... [-out FILE]

Prints the authorization block of a nats-server configuration for an
external NATS cluster: one account per LCM process with the same
least-privilege permissions a listening embedded NATS gives it, passwords
read from FILE and written as bcrypt hashes. Include it from nats.conf.`

// runNATSAuth is `lcm-api nats-auth`.
func runNATSAuth(args []string, stdout, stderr io.Writer) error {
	var users []bus.User
	fs := flag.NewFlagSet("nats-auth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, natsAuthUsage); fs.PrintDefaults() }
	add := func(kind string, mk func(name, pw, extra string) (bus.User, error)) func(string) error {
		return func(v string) error {
			spec, file, ok := strings.Cut(v, "=")
			if !ok || spec == "" || file == "" {
				return fmt.Errorf("-%s %q: want USER=FILE", kind, v)
			}
			pw, err := readPasswordFile(file)
			if err != nil {
				return fmt.Errorf("-%s %s: %w", kind, spec, err)
			}
			name, extra, _ := strings.Cut(spec, ":")
			u, err := mk(name, pw, extra)
			if err != nil {
				return fmt.Errorf("-%s %s: %w", kind, spec, err)
			}
			users = append(users, u)
			return nil
		}
	}
	noExtra := func(f func(name, pw string) bus.User) func(name, pw, extra string) (bus.User, error) {
		return func(name, pw, extra string) (bus.User, error) {
			if extra != "" {
				return bus.User{}, errors.New("USER=FILE takes no \":\" part")
			}
			return f(name, pw), nil
		}
	}
	fs.Func("api", "lcm-api's account (every right): USER=FILE", add("api", noExtra(bus.FullUser)))
	fs.Func("worker", "an lcm-worker account serving segments: USER:SEGMENT[,SEGMENT]=FILE (repeat per worker account)",
		add("worker", func(name, pw, extra string) (bus.User, error) {
			var segs []string
			for _, s := range strings.Split(extra, ",") {
				if s = strings.TrimSpace(s); s != "" {
					segs = append(segs, s)
				}
			}
			if len(segs) == 0 {
				return bus.User{}, errors.New("want USER:SEGMENT[,SEGMENT]=FILE")
			}
			return bus.WorkerUser(name, pw, segs), nil
		}))
	fs.Func("agentgw", "an lcm-agentgw account: USER=FILE", add("agentgw", noExtra(bus.AgentGatewayUser)))
	fs.Func("scanner", "an lcm-scanner account: USER=FILE", add("scanner", noExtra(bus.ScannerUser)))
	out := fs.String("out", "", "write to this file (mode 0600) instead of standard output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("nats-auth: unexpected argument %q", fs.Arg(0))
	}
	if len(users) == 0 {
		return errors.New(natsAuthUsage)
	}
	conf, err := bus.AuthorizationConf(users, func(pw string) (string, error) {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
		return string(h), err
	})
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(conf)
		return err
	}
	return os.WriteFile(*out, conf, 0o600)
}

// readPasswordFile reads a secret file: trailing newlines dropped, empty
// refused.
func readPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return pw, nil
}
