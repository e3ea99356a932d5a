package fleet_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

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
					State: state, AgentVersion: "1.2.3", Hostname: "edge-1", Time: now.Format(time.RFC3339)})
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
			if !s.Agent.Online(now) || s.Agent.Version != "1.2.3" || s.Agent.Hostname != "edge-1" || connects != 1 {
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
			if s := get(); s.Agent.Connected {
				t.Fatal("offline notice ignored")
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
