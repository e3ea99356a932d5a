// Command lcm-agent runs on a managed server behind NAT: it enrolls once
// with a one-time token, pins the gateway's TLS certificate, and then keeps
// an outbound MQTT-over-WebSocket connection to the agent gateway, running
// the commands it receives with `sh -c`.
//
// Usage:
//
//	lcm-agent enroll [-config /etc/lcm-agent/agent.json] [-force] <token>
//	lcm-agent run [-config /etc/lcm-agent/agent.json] [-state /run/lcm-agent/state.json] [-debug]
//	lcm-agent status [-config /etc/lcm-agent/agent.json] [-state /run/lcm-agent/state.json] [-json]
//	lcm-agent install-service [-config /etc/lcm-agent/agent.json]
//	lcm-agent -version
//
// It never links server code (gin, gorm, nats, mochi): see deps_test.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lcmproject/lcm/internal/version"
)

const name = "lcm-agent"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(os.Stderr, name+":", ee.msg)
			}
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

const usage = `usage:
  lcm-agent enroll [-config path] [-force] <token>   enroll this host (once)
  lcm-agent run [-config path] [-state path] [-debug]
                                                     connect and execute commands
  lcm-agent status [-config path] [-state path] [-json]
                                                     connection state; exit 0 connected, 1 not enrolled,
                                                     2 usage, 3 not running, 4 running but not connected
  lcm-agent install-service [-config path]           install, enable and start the systemd unit
  lcm-agent -version                                 print the version`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	switch args[0] {
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, version.Get().String(name))
		return nil
	case "enroll":
		return runEnroll(ctx, args[1:], stdout, stderr)
	case "run":
		return runAgent(ctx, args[1:], stderr)
	case "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case "install-service":
		return runInstallService(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}
