package fleet_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// TestAgentMonitor: heartbeats make the agent online and the server
// contacted; a disconnect or a silence longer than domain.AgentSilence
// count as failed contacts, and two in a row make the traffic light
// unreachable, as for SSH; reports about a replaced agent id change
// nothing; malformed payloads are ignored.
func TestAgentMonitor(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			svc := status.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
			svc.SetClock(clock)
			srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "agent-1", Transport: domain.TransportAgent,
				Status: domain.ServerUnknown, AuthMethod: domain.TransportAgent, Joined: true}})
			if err != nil {
				t.Fatal(err)
			}
			agentID := agentproto.NewID()
			if old, err := st.SetAgentID(ctx, srv.ID, agentID, now); err != nil || old != "" {
				t.Fatalf("SetAgentID: %q %v", old, err)
			}
			var connects int
			m := &fleet.AgentMonitor{Store: st, Now: clock, OnConnect: func(context.Context, string) { connects++ },
				Contact: func(ctx context.Context, id string, ok bool, reason string) error {
					_, err := svc.RecordContact(ctx, id, ok, reason)
					return err
				}}
			statusMsg := func(state string) []byte {
				b, _ := json.Marshal(agentproto.Status{Header: agentproto.NewHeader(agentproto.TypeStatus, agentproto.NewID()),
					State: state, AgentVersion: "1.2.3", Hostname: "edge-1", Time: now.Format(time.RFC3339), Gateway: "gw-" + state})
				return b
			}
			get := func() domain.Server {
				t.Helper()
				s, err := st.GetServer(ctx, store.SystemScope, srv.ID)
				if err != nil || s.Agent == nil {
					t.Fatalf("GetServer: %+v %v", s, err)
				}
				return s
			}
			light := func() domain.ServerStatus {
				t.Helper()
				r, err := svc.Recompute(ctx, srv.ID)
				if err != nil {
					t.Fatal(err)
				}
				return r.Status
			}
			if light() != domain.ServerUnknown {
				t.Fatal("a server whose agent never connected is not unknown")
			}

			// Garbage and other agents' ids change nothing.
			m.HandleStatus(agentID, []byte(`{"v":1,"type":"status"}`))
			m.HandleStatus(agentID, []byte(`not json`))
			m.HandleStatus("not-an-id", statusMsg(agentproto.StateOnline))
			m.HandleStatus(agentproto.NewID(), statusMsg(agentproto.StateOnline))
			if s := get(); s.Agent.Connected || s.Agent.LastSeenAt != nil {
				t.Fatalf("state after foreign or malformed reports: %+v", s.Agent)
			}

			m.HandleStatus(agentID, statusMsg(agentproto.StateOnline))
			s := get()
			if !s.Agent.Online(now) || s.Agent.Version != "1.2.3" || s.Agent.Hostname != "edge-1" || connects != 1 ||
				s.Agent.Gateway != "gw-online" || s.Agent.Capability != agentproto.CapabilityVersion {
				t.Fatalf("after a heartbeat: %+v (connects %d)", s.Agent, connects)
			}
			if l := light(); l == domain.ServerUnknown || l == domain.ServerUnreachable {
				t.Fatalf("connected agent server light: %s", l)
			}
			m.HandleStatus(agentID, statusMsg(agentproto.StateOnline))
			if connects != 1 {
				t.Fatal("a heartbeat of a connected agent counted as a new connection")
			}

			// Silence: one sweep after domain.AgentSilence disconnects it
			// (one failed contact), the next makes it unreachable.
			now = now.Add(domain.AgentSilence + time.Second)
			if err := m.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if s := get(); s.Agent.Connected || s.Agent.Online(now) {
				t.Fatalf("silent agent still connected: %+v", s.Agent)
			}
			if l := light(); l == domain.ServerUnreachable {
				t.Fatal("unreachable after a single failed contact")
			}
			now = now.Add(45 * time.Second)
			if err := m.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if l := light(); l != domain.ServerUnreachable {
				t.Fatalf("after a long silence the light is %s, want unreachable", l)
			}

			// Back: the next heartbeat is a successful contact.
			m.HandleStatus(agentID, statusMsg(agentproto.StateOnline))
			if l := light(); l == domain.ServerUnreachable || connects != 2 {
				t.Fatalf("after the agent came back: %s (connects %d)", l, connects)
			}
			// The gateway's offline notice disconnects at once.
			m.HandleStatus(agentID, statusMsg(agentproto.StateOffline))
			if s := get(); s.Agent.Connected || s.Agent.Gateway != "gw-offline" || s.Agent.Capability != agentproto.CapabilityVersion {
				t.Fatalf("offline notice: %+v", s.Agent)
			}

			// A new enrollment: reports of the old id are ignored.
			newID := agentproto.NewID()
			if old, err := st.SetAgentID(ctx, srv.ID, newID, now); err != nil || old != agentID {
				t.Fatalf("SetAgentID again: %q %v", old, err)
			}
			m.HandleStatus(agentID, statusMsg(agentproto.StateOnline))
			if s := get(); s.Agent.Connected || s.Agent.AgentID != newID {
				t.Fatalf("report of a replaced agent changed the state: %+v", s.Agent)
			}
		})
	}
}

// crashLease is a lease whose holder dies: Release does nothing, so the
// lease stays until its TTL runs out, as after a killed process.
type crashLease struct{ *bus.Lease }

func (crashLease) Release(context.Context) error { return nil }

// TestAgentMonitorTwoReplicas runs the agent monitor of two lcm-api
// replicas (one NATS, one database, each with its own lease) while a
// gateway publishes status messages: only the lease holder handles them
// and sweeps, so one disconnect counts exactly one failed contact and one
// connect one connection check; when the leader dies without releasing
// its lease, the other replica takes over. Concurrent reports of one
// transition (an overlap at a handover) count once: the store's
// compare-and-set.
func TestAgentMonitorTwoReplicas(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			st := storetest.Open(t, db.URL)
			b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir(), Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			srv, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "agent-ha", Transport: domain.TransportAgent,
				Status: domain.ServerUnknown, AuthMethod: domain.TransportAgent, Joined: true}})
			if err != nil {
				t.Fatal(err)
			}
			agentID := agentproto.NewID()
			if _, err := st.SetAgentID(ctx, srv.ID, agentID, time.Now()); err != nil {
				t.Fatal(err)
			}
			type replica struct {
				name                 string
				ok, failed, connects atomic.Int32
				handled              atomic.Int32
				subscribed           atomic.Int32 // status subscriptions the replica took
				cancel               context.CancelFunc
				done                 chan struct{}
			}
			start := func(name string) *replica {
				r := &replica{name: name, done: make(chan struct{})}
				m := &fleet.AgentMonitor{Store: st, Log: quiet,
					OnConnect: func(context.Context, string) { r.connects.Add(1) },
					Contact: func(_ context.Context, _ string, ok bool, _ string) error {
						if ok {
							r.ok.Add(1)
						} else {
							r.failed.Add(1)
						}
						return nil
					}}
				l, err := b.NewLease(ctx, bus.BucketLeader, "agent-monitor-test", name, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				sub := func(fn func(string, []byte)) (func() error, error) {
					unsub, err := b.SubscribeAgents(string(agentproto.ChannelStatus), func(id string, data []byte) {
						r.handled.Add(1)
						fn(id, data)
					})
					if err == nil {
						r.subscribed.Add(1)
					}
					return unsub, err
				}
				rctx, cancel := context.WithCancel(ctx)
				r.cancel = cancel
				// Sweeps every hour: this test is about status messages.
				go func() { defer close(r.done); m.RunLeader(rctx, crashLease{l}, sub, time.Hour, 200*time.Millisecond) }()
				return r
			}
			a := start("replica-a")
			leads := func(r *replica) bool {
				kv, err := b.KV(ctx, bus.BucketLeader)
				if err != nil {
					return false
				}
				e, err := kv.Get(ctx, "agent-monitor-test")
				return err == nil && strings.Contains(string(e.Value()), r.name)
			}
			// The lease is taken before the subscription: a status
			// published in between would reach no one (core NATS).
			testutil.WaitFor(t, 10*time.Second, "replica a leads and listens", func() bool { return leads(a) && a.subscribed.Load() > 0 })
			bRep := start("replica-b")
			defer func() {
				a.cancel()
				bRep.cancel()
				<-a.done
				<-bRep.done
			}()
			publish := func(state string) {
				t.Helper()
				msg, _ := json.Marshal(agentproto.Status{Header: agentproto.NewHeader(agentproto.TypeStatus, agentproto.NewID()),
					State: state, AgentVersion: "1.0.0", Time: time.Now().UTC().Format(time.RFC3339), Gateway: "gw-1"})
				if err := b.PublishAgent(agentID, string(agentproto.ChannelStatus), msg); err != nil {
					t.Fatal(err)
				}
			}
			connected := func(want bool) func() bool {
				return func() bool {
					s, err := st.GetServer(ctx, store.SystemScope, srv.ID)
					return err == nil && s.Agent != nil && s.Agent.Connected == want && s.Agent.LastSeenAt != nil
				}
			}
			// Give replica b time to try for the lease (and fail) at
			// least once, so it would be subscribed if it wrongly took it.
			testutil.WaitFor(t, 10*time.Second, "replica b running", func() bool { return !leads(bRep) })
			publish(agentproto.StateOnline)
			testutil.WaitFor(t, 10*time.Second, "connected", connected(true))
			publish(agentproto.StateOnline) // a heartbeat: no change
			publish(agentproto.StateOffline)
			testutil.WaitFor(t, 10*time.Second, "disconnected", connected(false))
			testutil.WaitFor(t, 10*time.Second, "all three handled", func() bool { return a.handled.Load() == 3 })
			if a.ok.Load() != 1 || a.failed.Load() != 1 || a.connects.Load() != 1 {
				t.Fatalf("leader counted ok %d, failed %d, connects %d; want 1, 1, 1", a.ok.Load(), a.failed.Load(), a.connects.Load())
			}
			if bRep.handled.Load() != 0 || bRep.ok.Load()+bRep.failed.Load()+bRep.connects.Load() != 0 {
				t.Fatalf("the follower handled %d messages (ok %d, failed %d)", bRep.handled.Load(), bRep.ok.Load(), bRep.failed.Load())
			}

			// The leader dies without releasing its lease: b takes over
			// once it expires and keeps the state from then on.
			a.cancel()
			<-a.done
			testutil.WaitFor(t, 15*time.Second, "replica b leads", func() bool { return leads(bRep) })
			testutil.WaitFor(t, 10*time.Second, "replica b subscribed", func() bool {
				publish(agentproto.StateOnline)
				return bRep.handled.Load() > 0 && connected(true)()
			})
			if bRep.ok.Load() != 1 || bRep.connects.Load() != 1 || a.handled.Load() != 3 {
				t.Fatalf("after the handover: b ok %d connects %d, a handled %d", bRep.ok.Load(), bRep.connects.Load(), a.handled.Load())
			}

			// Concurrent reports of the same transition (on another
			// agent, which no status message touches): exactly one of
			// them sees the change.
			srv2, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "agent-ha-2", Transport: domain.TransportAgent,
				Status: domain.ServerUnknown, AuthMethod: domain.TransportAgent, Joined: true}})
			if err != nil {
				t.Fatal(err)
			}
			agentID = agentproto.NewID()
			if _, err := st.SetAgentID(ctx, srv2.ID, agentID, time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, ch, err := st.RecordAgentState(ctx, store.AgentReport{AgentID: agentID, Connected: true, At: time.Now().UTC()}); err != nil || !ch {
				t.Fatalf("connect: %v %v", ch, err)
			}
			var changed atomic.Int32
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, ch, err := st.RecordAgentState(ctx, store.AgentReport{AgentID: agentID, Connected: false, At: time.Now().UTC()})
					if err != nil {
						t.Error(err)
					}
					if ch {
						changed.Add(1)
					}
				}()
			}
			wg.Wait()
			if changed.Load() != 1 {
				t.Fatalf("%d of 8 concurrent disconnect reports saw the change, want 1", changed.Load())
			}
		})
	}
}
