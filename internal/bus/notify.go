package bus

import (
	"slices"

	"github.com/nats-io/nats.go"
)

// RecordsChangedType and RecordsChangedVersion identify the payload on
// SubjectRecordsChanged, sent with Notify (core NATS, no ack): a replica
// that misses one while disconnected catches up on its next start.
const (
	RecordsChangedType    = "records.changed"
	RecordsChangedVersion = 1
)

// RecordsChanged lists the zones a committed write changed or deleted.
// Replica is the sender's random id, so a replica skips its own messages.
type RecordsChanged struct {
	Type    string   `json:"type"`
	V       int      `json:"v"`
	Replica string   `json:"replica"`
	ZoneIDs []string `json:"zoneIds"`
}

// FleetChangedType and FleetChangedVersion identify the payload on
// SubjectFleetChanged (core NATS, no ack; a replica treats a reconnect as
// a change, so a message missed while disconnected costs nothing).
const (
	FleetChangedType    = "fleet.changed"
	FleetChangedVersion = 1
)

// FleetChanged says that a replica committed a change the server list
// shows: of the listed servers, or of any (All). Replica is the sender's
// random id, so a replica skips its own.
type FleetChanged struct {
	Type      string   `json:"type"`
	V         int      `json:"v"`
	Replica   string   `json:"replica"`
	All       bool     `json:"all,omitempty"`
	ServerIDs []string `json:"server_ids,omitempty"`
}

// OnReconnect adds fn to what runs after the connection to NATS is
// re-established (messages sent meanwhile were lost).
func (b *Bus) OnReconnect(fn func()) {
	b.reconnectMu.Lock()
	defer b.reconnectMu.Unlock()
	b.onReconnect = append(b.onReconnect, fn)
	if len(b.onReconnect) == 1 {
		b.NC.SetReconnectHandler(func(*nats.Conn) {
			b.reconnectMu.Lock()
			fns := slices.Clone(b.onReconnect)
			b.reconnectMu.Unlock()
			for _, f := range fns {
				f()
			}
		})
	}
}
