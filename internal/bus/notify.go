package bus

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
