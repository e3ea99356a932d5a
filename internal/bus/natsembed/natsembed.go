// Package natsembed runs the NATS server inside the process, the
// all-in-one default of lcm-api. Importing it registers the server with
// package bus (bus.Open without a URL); it is the only package that links
// nats-server, so lcm-worker and lcm-agentgw, which always dial a URL,
// carry none of it.
package natsembed

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/lcmproject/lcm/internal/bus"
)

func init() {
	bus.RegisterEmbedded(func(o bus.Options, name string) (bus.EmbeddedServer, error) { return startEmbedded(o, name) })
}

func startEmbedded(o bus.Options, name string) (*server.Server, error) {
	opts := &server.Options{
		ServerName: name,
		JetStream:  true,
		StoreDir:   filepath.Join(o.DataDir, "nats"),
		NoSigs:     true,
		NoLog:      true,
		// Without a listen address the server takes no port at all: only the
		// in-process connection reaches it.
		DontListen: o.Listen == "",
		// Bounded so a runaway stream cannot fill the disk.
		JetStreamMaxStore:  8 << 30,
		JetStreamMaxMemory: 256 << 20,
	}
	if o.Listen != "" {
		host, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("bus: nats.listen %q: %w", o.Listen, err)
		}
		opts.Host = host
		if opts.Port, err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("bus: nats.listen %q: bad port", o.Listen)
		}
		if o.TLS == nil {
			return nil, errors.New("bus: a listening embedded NATS needs TLS")
		}
		opts.TLSConfig = o.TLS
		opts.TLS = true
		opts.Users = serverUsers(o.Users)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded NATS: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		if o.Listen != "" {
			return nil, fmt.Errorf("bus: embedded NATS did not start; is %s (nats.listen) already in use?", o.Listen)
		}
		return nil, errors.New("bus: embedded NATS did not start")
	}
	return ns, nil
}

// serverUsers converts bus users to nats-server accounts.
func serverUsers(in []bus.User) []*server.User {
	out := make([]*server.User, len(in))
	for i, u := range in {
		out[i] = &server.User{Username: u.Name, Password: u.Password}
		if p := u.Permissions; p != nil {
			out[i].Permissions = &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: p.Publish},
				Subscribe: &server.SubjectPermission{Allow: p.Subscribe},
			}
			if p.ResponseMaxMsgs > 0 {
				out[i].Permissions.Response = &server.ResponsePermission{MaxMsgs: p.ResponseMaxMsgs}
			}
		}
	}
	return out
}
