package main

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/store"
)

// wireFleetChanges keeps the cached server listings of all replicas
// current: every committed local change to the fleet tables is announced
// on SubjectFleetChanged, and a change announced by another replica is
// recorded here too; a NATS reconnect, after which announcements may have
// been lost, counts as a change of every server. Single-replica installs
// need none of it (the store records its own changes) but pay only a
// publish.
func (a *app) wireFleetChanges(ctx context.Context) error {
	replica := uuid.NewString()
	a.store.OnFleetChange(func(ch store.FleetChange) {
		msg, _ := json.Marshal(bus.FleetChanged{Type: bus.FleetChangedType, V: bus.FleetChangedVersion, Replica: replica,
			All: ch.All, ServerIDs: ch.ServerIDs})
		if err := a.bus.Notify(bus.SubjectFleetChanged, msg); err != nil {
			a.log.Debug("fleet change not announced to other replicas", "err", err)
		}
	})
	stop, err := a.bus.Subscribe(bus.SubjectFleetChanged, func(_ string, data []byte) {
		var m bus.FleetChanged
		if json.Unmarshal(data, &m) != nil || m.Type != bus.FleetChangedType || m.Replica == replica {
			return
		}
		if m.V > bus.FleetChangedVersion || (!m.All && len(m.ServerIDs) == 0) {
			m.All = true // a newer or unreadable message: assume the worst
		}
		a.store.NoteFleetChange(store.FleetChange{All: m.All, ServerIDs: m.ServerIDs})
	})
	if err != nil {
		return err
	}
	a.bus.OnReconnect(a.store.TouchFleet)
	go func() { <-ctx.Done(); stop() }()
	return nil
}
