package bus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MessageVersion is the version of every job-protocol payload below. A
// receiver refuses a payload with a newer version instead of misreading it.
const MessageVersion = 1

// Payload types (the "type" field).
const (
	TypeJob       = "job"
	TypeOutput    = "output"
	TypeState     = "state"
	TypeHeartbeat = "heartbeat"
	TypeCredsReq  = "creds.req"
	TypeCredsRes  = "creds.res"
	TypeAbort     = "abort"
)

// JobMsg is published to JobSubject(segment, serverID) with Nats-Msg-Id =
// JobID. It carries no secret: the worker asks for credentials when it
// runs the job.
type JobMsg struct {
	V        int             `json:"v"`
	Type     string          `json:"type"`
	JobID    string          `json:"job_id"`
	ServerID string          `json:"server_id"`
	Kind     string          `json:"kind"`
	Segment  string          `json:"segment"`
	Params   json.RawMessage `json:"params,omitempty"`
}

// OutputMsg is one console output chunk on JobOutputSubject(jobID),
// published with Nats-Msg-Id "<job_id>/<seq>". On the wire it is a JSON
// header line (every field but Data) followed by the raw bytes: console
// output is the bulk of all bus traffic, and base64 inside JSON cost a
// third of the ingest's CPU.
type OutputMsg struct {
	V      int    `json:"v"`
	Type   string `json:"type"`
	JobID  string `json:"job_id"`
	Seq    int64  `json:"seq"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"-"`
}

// Encode returns the wire form: header JSON, "\n", data.
func (m OutputMsg) Encode() []byte {
	head, _ := json.Marshal(m)
	out := make([]byte, 0, len(head)+1+len(m.Data))
	out = append(append(append(out, head...), '\n'), m.Data...)
	return out
}

// DecodeOutput parses the wire form; Data aliases b.
func DecodeOutput(b []byte) (OutputMsg, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return OutputMsg{}, errors.New("bus: output message without header")
	}
	var m OutputMsg
	if err := json.Unmarshal(b[:i], &m); err != nil {
		return OutputMsg{}, fmt.Errorf("bus: output header: %w", err)
	}
	m.Data = b[i+1:]
	return m, nil
}

// OriginControl marks a StateMsg the control plane published for live
// followers (a claim, the reaper's verdict, an abort): the row has it
// already, and the ingest must not take it for a worker's report.
const OriginControl = "control"

// StateMsg is a state change or heartbeat on JobStateSubject(jobID).
type StateMsg struct {
	V        int    `json:"v"`
	Type     string `json:"type"` // TypeState or TypeHeartbeat
	JobID    string `json:"job_id"`
	WorkerID string `json:"worker_id"`
	// Seq numbers a job's state changes in the order its worker sent them
	// (1 running, 2 the final state); the ingest applies a report only if
	// it is newer than the last one applied (domain.Job.Accepts).
	Seq int64 `json:"seq,omitempty"`
	// Origin is OriginControl for the control plane's announcements, ""
	// for a worker's report.
	Origin   string          `json:"origin,omitempty"`
	Status   string          `json:"status,omitempty"`
	At       time.Time       `json:"at"`
	ExitCode *int            `json:"exit_code,omitempty"`
	Error    string          `json:"error,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	// OutputBytes is the job's output size when the state was sent.
	OutputBytes int64 `json:"output_bytes,omitempty"`
	// Data is a final state's payload for the control plane (a refresh's
	// gzipped facts and inventory, actions.EncodeRefresh). It reaches the
	// finish hooks and is not stored with the job.
	Data []byte `json:"data,omitempty"`
	// Unreachable marks a final state whose error is a transport failure
	// (the server could not be reached), as opposed to a command failure.
	Unreachable bool `json:"unreachable,omitempty"`
}

// CredsRequest asks, on SubjectCredsRequest, for the credentials of a job's
// server. It also claims the job for the worker.
type CredsRequest struct {
	V        int    `json:"v"`
	Type     string `json:"type"`
	JobID    string `json:"job_id"`
	ServerID string `json:"server_id"`
	WorkerID string `json:"worker_id"`
	Segment  string `json:"segment"` // the segment the job message came from
	// PublicKey is the worker's X25519 public key (32 bytes).
	PublicKey []byte `json:"public_key"`
}

// CredsReply answers a CredsRequest: Sealed holds the credentials sealed
// to the worker's public key (nacl/box anonymous), or Code/Error say why not.
type CredsReply struct {
	V      int    `json:"v"`
	Type   string `json:"type"`
	OK     bool   `json:"ok"`
	Code   string `json:"code,omitempty"` // "not_claimable", "not_found", "forbidden", "internal"
	Error  string `json:"error,omitempty"`
	Sealed []byte `json:"sealed,omitempty"`
}

// ControlMsg is a request on JobControlSubject(jobID); the worker replies
// with a ControlMsg of the same type to acknowledge.
type ControlMsg struct {
	V      int    `json:"v"`
	Type   string `json:"type"` // TypeAbort
	JobID  string `json:"job_id"`
	Reason string `json:"reason,omitempty"`
}

// ScanRequest asks a scanner to match one SBOM (CycloneDX JSON, gzipped:
// a server's SBOM can exceed NATS's default 1 MiB payload).
type ScanRequest struct {
	V        int    `json:"v"`
	Key      string `json:"key"`       // the caller's id for the package set (a hash)
	SBOMGzip []byte `json:"sbom_gzip"` // gzip of the CycloneDX JSON
}

// ScanResult is a scanner's answer: the findings (vulndb.Finding list as
// JSON) or an error; Disabled with Reason when it has no database.
type ScanResult struct {
	V      int    `json:"v"`
	Key    string `json:"key"`
	Engine string `json:"engine"`
	// Scanner names the scanner that matched (host/pid), for logs and to
	// see the queue group share the work.
	Scanner string `json:"scanner,omitempty"`
	// FindingsGzip is the gzipped JSON list of findings; when even that
	// exceeds the NATS payload limit, FindingsObject names it in the
	// BucketVulnDB object store instead (the requester deletes it).
	FindingsGzip   []byte `json:"findings_gzip,omitempty"`
	FindingsObject string `json:"findings_object,omitempty"`
	Disabled       bool   `json:"disabled,omitempty"`
	Reason         string `json:"reason,omitempty"`
	Error          string `json:"error,omitempty"`
}

// ScannerStatus is a scanner's report of its engine and database.
type ScannerStatus struct {
	V          int                `json:"v"`
	Scanner    string             `json:"scanner"` // host/pid
	Engine     string             `json:"engine"`  // "osv" (built-in) or "" when disabled
	Enabled    bool               `json:"enabled"`
	Reason     string             `json:"reason,omitempty"`
	Records    int                `json:"records"`
	Newest     *time.Time         `json:"newest,omitempty"`
	LoadedAt   *time.Time         `json:"loaded_at,omitempty"`
	Ecosystems []ScannerEcosystem `json:"ecosystems"`
	// Cache counts the scanner's per-package-version match cache since its
	// database was loaded (GET /security/caches).
	Cache *CacheCounters `json:"cache,omitempty"`
}

// CacheCounters are a lookup cache's hit and miss counts.
type CacheCounters struct {
	Hits    int64 `json:"hits"`
	Misses  int64 `json:"misses"`
	Entries int64 `json:"entries"`
}

// ScannerEcosystem is one loaded <ecosystem>/all.zip.
type ScannerEcosystem struct {
	Name       string    `json:"name"`
	Records    int       `json:"records"`
	ImportedAt time.Time `json:"imported_at"`
	Newest     time.Time `json:"newest"`
}
