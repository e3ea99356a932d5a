// Command lcm-agentgw is the agent gateway as its own process (scaled
// mode): MQTT over WebSocket at /mqtt with TLS, for agents behind NAT,
// bridged into an external NATS JetStream. It holds no database access —
// only the agent credential hashes it reads from NATS KV.
//
// Usage:
//
//	lcm-agentgw -tls-cert cert.pem -tls-key key.pem -nats-url nats://nats:4222 \
//	    [-listen 0.0.0.0:9320] [-name edge-1] [-nats-user u] [-nats-password-file f] [-nats-ca ca.pem] [-debug]
//	lcm-agentgw -version
//
// The NATS password may also come from LCM_NATS_PASSWORD (never a flag, so
// it does not show in the process list).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/lcmproject/lcm/internal/health"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var ec health.ExitError
	if errors.As(err, &ec) {
		os.Exit(int(ec))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
