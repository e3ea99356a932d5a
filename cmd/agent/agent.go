package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/lcmproject/lcm/internal/version"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// Reconnect backoff: from 1 s doubling up to 60 s. Why: a gateway restart
// is back within seconds, while a fleet of agents hammering a gateway that
// is down for long must spread out.
const (
	backoffMin = time.Second
	backoffMax = time.Minute
)

// reconnectBackoff connects at once on the first attempt (autopaho waits
// before every attempt, including the first) and backs off exponentially
// with jitter after failures.
func reconnectBackoff() func(int) time.Duration {
	exp := autopaho.NewExponentialBackoff(backoffMin, backoffMax, 2*backoffMin, 2)
	return func(attempt int) time.Duration {
		if attempt == 0 {
			return 0
		}
		return exp(attempt)
	}
}

// keepAlive is the MQTT keep-alive in seconds. Why 30: NAT gateways and
// proxies commonly drop idle TCP flows after 60 s or more.
const keepAlive = 30

// runAgent: lcm-agent run [-config path]
func runAgent(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("lcm-agent run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", defaultConfigPath, "agent configuration written by enroll")
	statePath := fs.String("state", defaultStatePath, "where to keep the runtime state for `lcm-agent status` (empty: nowhere)")
	debug := fs.Bool("debug", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("agent_id", cfg.AgentID)
	log.Info("lcm-agent starting", "version", version.Get().String(name), "gateway", cfg.GatewayURL)
	a := &agent{cfg: cfg, log: log, state: newStateFile(*statePath, runState{PID: os.Getpid(), AgentID: cfg.AgentID,
		GatewayURL: cfg.GatewayURL, TLSFingerprintSHA256: cfg.TLSFingerprintSHA256, Version: version.Get().Version,
		Capability: agentproto.CapabilityVersion, State: stateConnecting, StartedAt: time.Now().UTC()})}
	defer notifySystemd(ctx)()
	return a.run(ctx)
}

type agent struct {
	cfg    config
	log    *slog.Logger
	cm     *autopaho.ConnectionManager
	runner *runner
	state  *stateFile
	// stateErrLogged keeps a failing state file to one log line.
	stateErrLogged atomic.Bool
}

// setState updates the state file; a failure is logged once and otherwise
// ignored (the file is for operators, the connection is what matters).
func (a *agent) setState(fn func(*runState)) {
	if err := a.state.update(fn); err != nil && !a.stateErrLogged.Swap(true) {
		a.log.Warn("state file not written; lcm-agent status will not see this agent", "path", a.state.path, "err", err)
	}
}

func (a *agent) contact() {
	a.setState(func(s *runState) {
		t := time.Now().UTC()
		s.LastContact = &t
		s.Running = a.runner.count()
	})
}

func (a *agent) run(ctx context.Context) error {
	u, err := url.Parse(a.cfg.GatewayURL)
	if err != nil {
		return err
	}
	cmdTopic := agentproto.Topic(a.cfg.AgentID, agentproto.ChannelCmd)
	// Commands outlive a reconnect; they end with ctx (agent shutdown).
	a.runner = newRunner(a.publish, a.log)
	a.setState(func(*runState) {})
	defer a.state.remove()
	var pinErrLogged atomic.Bool // OnConnectError runs on its own goroutines
	cc := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		TlsCfg:                        pinnedTLS(a.cfg.TLSFingerprintSHA256),
		KeepAlive:                     keepAlive,
		CleanStartOnInitialConnection: true,
		SessionExpiryInterval:         0,
		ReconnectBackoff:              reconnectBackoff(),
		ConnectTimeout:                dialTimeout,
		ConnectUsername:               a.cfg.AgentID,
		ConnectPassword:               []byte(a.cfg.Secret),
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			a.log.Info("connected to gateway")
			pinErrLogged.Store(false)
			a.setState(func(s *runState) {
				t := time.Now().UTC()
				s.State, s.ConnectedSince, s.LastContact, s.LastError = stateConnected, &t, &t, ""
			})
			go a.onUp(ctx, cm, cmdTopic)
		},
		OnConnectionDown: func() bool {
			a.log.Warn("connection to gateway lost; reconnecting")
			a.setState(func(s *runState) { s.State, s.ConnectedSince, s.LastError = stateDisconnected, nil, "connection lost" })
			return true
		},
		OnConnectError: func(err error) {
			var pe *PinError
			var ce *autopaho.ConnackError
			a.setState(func(s *runState) {
				if s.State == stateConnected {
					s.State = stateDisconnected
				}
				s.ConnectedSince, s.LastError = nil, err.Error()
			})
			switch {
			case errors.As(err, &pe):
				// Loud once per outage: a changed certificate needs an
				// operator (re-enroll), retrying will not fix it.
				if !pinErrLogged.Swap(true) {
					a.log.Error("gateway certificate does not match the pinned fingerprint; re-enroll if it was replaced on purpose", "err", err)
				}
			case errors.As(err, &ce) && ce.ReasonCode == reasonBadCredentials:
				a.log.Error("gateway rejected the agent's credentials (revoked or re-enrolled elsewhere?)", "err", err)
			default:
				a.log.Warn("cannot connect to gateway", "err", err)
			}
		},
		ClientConfig: paho.ClientConfig{
			ClientID: a.cfg.AgentID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){
				func(pr paho.PublishReceived) (bool, error) {
					if pr.Packet.Topic == cmdTopic {
						a.runner.handle(ctx, pr.Packet.Payload)
						a.contact()
					}
					return true, nil
				},
			},
		},
	}
	cm, err := autopaho.NewConnection(ctx, cc)
	if err != nil {
		return err
	}
	a.cm = cm
	hb := time.NewTicker(agentproto.HeartbeatInterval)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			a.log.Info("lcm-agent stopping", "running", a.runner.count())
			// ctx also cancelled every command: wait for their results to
			// be sent (bounded by the publish timeout) before leaving.
			a.runner.wait()
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = cm.Disconnect(dctx)
			return nil
		case <-cm.Done():
			return errors.New("connection manager stopped")
		case <-hb.C:
			a.sendStatus(ctx)
		}
	}
}

// onUp subscribes to the cmd topic (the gateway keeps no session) and
// announces the agent.
func (a *agent) onUp(ctx context.Context, cm *autopaho.ConnectionManager, topic string) {
	sctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	sa, err := cm.Subscribe(sctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}})
	if err != nil || len(sa.Reasons) != 1 || sa.Reasons[0] >= 0x80 {
		a.log.Error("subscribe to commands failed", "err", err)
		return
	}
	a.sendStatus(ctx)
}

func (a *agent) sendStatus(ctx context.Context) {
	host, _ := os.Hostname()
	st := &agentproto.Status{Header: agentproto.NewHeader(agentproto.TypeStatus, agentproto.NewID()),
		State: agentproto.StateOnline, AgentVersion: version.Get().Version, Hostname: host,
		Running: a.runner.count(), Time: time.Now().UTC().Format(time.RFC3339)}
	pctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if err := a.publishOnce(pctx, agentproto.ChannelStatus, st); err != nil {
		a.log.Debug("status not sent", "err", err)
		return
	}
	a.contact()
}

// publish delivers an envelope with QoS 1, waiting out reconnects until
// ctx ends; the caller bounds ctx.
func (a *agent) publish(ctx context.Context, ch agentproto.Channel, m any) error {
	for {
		err := a.publishOnce(ctx, ch, m)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		a.log.Debug("publish failed; waiting for the connection", "err", err)
		if werr := a.cm.AwaitConnection(ctx); werr != nil {
			return err
		}
	}
}

func (a *agent) publishOnce(ctx context.Context, ch agentproto.Channel, m any) error {
	b, err := agentproto.Encode(m)
	if err != nil {
		return err
	}
	pr, err := a.cm.Publish(ctx, &paho.Publish{QoS: 1, Topic: agentproto.Topic(a.cfg.AgentID, ch), Payload: b})
	if err != nil {
		return err
	}
	if pr != nil && pr.ReasonCode >= 0x80 {
		return fmt.Errorf("gateway refused the message (reason 0x%x)", pr.ReasonCode)
	}
	return nil
}
