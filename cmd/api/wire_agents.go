package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lcmproject/lcm/internal/agentdist"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// agentSweepEvery is how often silent agents are looked for. Why 45 s:
// with domain.AgentSilence (90 s) an agent that vanished without a
// disconnect counts as unreachable (two failed contacts) within about
// three minutes, and the sweep is one indexed query.
const agentSweepEvery = 45 * time.Second

// wireAgents connects the fleet service to the agent transport (tokens,
// downloads) and keeps the agent state of agent servers from the
// gateways' status messages, feeding the traffic light.
func (a *app) wireAgents(ctx context.Context, fl *fleet.Service, st *status.Service) {
	creds, err := a.bus.AgentCredentials(ctx)
	if err != nil {
		a.log.Error("agent tokens unavailable: no agent credential bucket", "err", err)
	}
	cfg := fleet.AgentConfig{Bus: a.bus, Port: a.cfg.AgentPort, Dist: agentdist.New("")}
	if err == nil {
		cfg.Credentials = creds
	}
	if a.tls != nil && len(a.tls.Certificates) > 0 && len(a.tls.Certificates[0].Certificate) > 0 {
		cfg.Fingerprint = agentproto.FingerprintSHA256(a.tls.Certificates[0].Certificate[0])
	}
	for _, g := range a.cfg.AgentGateways {
		cfg.Gateways = append(cfg.Gateways, fleet.AgentGateway{Name: g.Name, URL: g.URL, Fingerprint: g.TLSFingerprintSHA256, Segments: g.Segments})
	}
	fl.SetAgents(cfg)
	mon := &fleet.AgentMonitor{Store: a.store, Log: a.log, OnConnect: fl.AgentConnected,
		Contact: func(ctx context.Context, id string, ok bool, reason string) error {
			_, err := st.RecordContact(ctx, id, ok, reason)
			return err
		}}
	host, _ := os.Hostname()
	lease, err := a.bus.NewLease(ctx, bus.BucketLeader, "agent-monitor", fmt.Sprintf("%s/%d", host, os.Getpid()), schedule.DefaultLeaseTTL)
	if err != nil {
		a.log.Error("agent state not tracked", "err", err)
		return
	}
	sub := func(fn func(string, []byte)) (func() error, error) {
		return a.bus.SubscribeAgents(string(agentproto.ChannelStatus), fn)
	}
	go safe.Supervise(ctx, "agent monitor", func(ctx context.Context) error {
		mon.RunLeader(ctx, lease, sub, agentSweepEvery, agentLeaseRenewEvery)
		return nil
	})
}

// agentLeaseRenewEvery: the monitor's lease (schedule.DefaultLeaseTTL,
// 30 s) is renewed every 5 s, so a replica that died is replaced within
// about 30 s; its lost status messages are restored by the next heartbeat.
const agentLeaseRenewEvery = 5 * time.Second
