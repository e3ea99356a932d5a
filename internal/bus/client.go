package bus

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ClientOptions connect a process that uses the streams but does not own
// them (lcm-worker): it creates nothing and needs only its own rights.
type ClientOptions struct {
	URL      string
	User     string
	Password string
	// TLS, when set, is required for the connection (a listening embedded
	// NATS always speaks TLS).
	TLS  *tls.Config
	Name string
}

// Connect connects to a control plane's NATS. It keeps retrying while the
// control plane is down (at start and later), so a worker started before
// or during a restart of lcm-api joins as soon as NATS answers.
func Connect(ctx context.Context, o ClientOptions) (*Bus, error) {
	opts := []nats.Option{nats.Name(o.Name), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond),
		nats.Timeout(5 * time.Second), nats.RetryOnFailedConnect(true),
		// An account the servers do not know yet (added and reloaded
		// after the process started) is retried like an unreachable
		// server, not given up for good after two refusals.
		nats.IgnoreAuthErrorAbort()}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.TLS != nil {
		opts = append(opts, nats.Secure(o.TLS))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect %s: %w", o.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &Bus{NC: nc, JS: js}, nil
}
