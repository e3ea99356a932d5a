package domain

import "time"

// JobStatus is the state of a job.
//
//	            submit (lock taken, published)
//	                 │
//	                 ▼
//	┌──────────── pending ───────────────┐
//	│ abort          │ worker claims     │ no worker took it in time
//	│                ▼ (creds request)   │
//	│             started ──────────┐    │
//	│                │ first cmd    │    │
//	│                ▼              │    │
//	│             running           │    │
//	│         ┌──────┼───────┐      │    │
//	▼         ▼      ▼       ▼      ▼    ▼
//	aborted  success failed  aborted failed (worker vanished, host key changed, …)
//
//	blocked: the answer to a submit for a busy server; no job row is kept.
//
// Terminal states (success, failed, aborted, blocked) never change again;
// every transition releases nothing but the terminal ones, which release the
// server lock.
type JobStatus string

// Job statuses.
const (
	JobPending JobStatus = "pending"
	JobStarted JobStatus = "started"
	JobRunning JobStatus = "running"
	JobSuccess JobStatus = "success"
	JobFailed  JobStatus = "failed"
	JobAborted JobStatus = "aborted"
	JobBlocked JobStatus = "blocked"
)

// JobStatuses lists every status in display order.
var JobStatuses = []JobStatus{JobPending, JobStarted, JobRunning, JobSuccess, JobFailed, JobAborted, JobBlocked}

// String returns the wire value.
func (s JobStatus) String() string { return string(s) }

// Valid reports whether s is a known status.
func (s JobStatus) Valid() bool {
	for _, v := range JobStatuses {
		if v == s {
			return true
		}
	}
	return false
}

// Terminal reports whether s is final.
func (s JobStatus) Terminal() bool {
	switch s {
	case JobSuccess, JobFailed, JobAborted, JobBlocked:
		return true
	}
	return false
}

// Active reports whether a job in s holds its server's lock.
func (s JobStatus) Active() bool { return s == JobPending || s == JobStarted || s == JobRunning }

var jobTransitions = map[JobStatus][]JobStatus{
	JobPending: {JobStarted, JobAborted, JobFailed},
	JobStarted: {JobRunning, JobSuccess, JobFailed, JobAborted},
	JobRunning: {JobSuccess, JobFailed, JobAborted},
}

// CanTransition reports whether a job may move from one status to another.
// Staying in the same status is not a transition.
func CanTransition(from, to JobStatus) bool {
	for _, t := range jobTransitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// JobKind names what a job does; it is the job_name the API returns.
type JobKind string

// Job kinds.
const (
	JobJoin            JobKind = "join"
	JobConnectivity    JobKind = "connectivity-check"
	JobUpgradeSecurity JobKind = "upgrade-security"
	JobRotateKey       JobKind = "rotate-key"
	JobReconnect       JobKind = "reconnect"
	JobDecommission    JobKind = "decommission"
)

// JobKinds lists every kind (filter options).
var JobKinds = append(append([]JobKind{JobJoin, JobConnectivity, JobUpgradeSecurity, JobRotateKey, JobReconnect, JobDecommission,
	JobLinuxUser, JobLinuxUserScan}, InventoryJobKinds...), append(HardeningJobKinds, ContainerJobKinds...)...)

// String returns the wire value.
func (k JobKind) String() string { return string(k) }

// Job is one unit of remote work on one server.
type Job struct {
	ID          string
	Kind        JobKind
	ServerID    string
	ServerName  string
	Segment     string
	Status      JobStatus
	WorkerID    string
	CreatedBy   string
	CreatedAt   time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
	HeartbeatAt *time.Time
	ExitCode    *int
	Error       string
	OutputBytes int64
	// Params are the job's non-secret parameters (JSON); Result is what the
	// worker reported at the end (facts, JSON). Neither holds a secret.
	Params []byte
	Result []byte
	// Data and Unreachable exist only while the finish hooks run (never
	// stored): the worker's payload for the control plane (a refresh's
	// encoded facts and inventory) and whether the job failed because the
	// server could not be reached.
	Data        []byte
	Unreachable bool
}

// JobFilter selects jobs in the history.
type JobFilter struct {
	ServerID string
	Status   JobStatus
	Kind     JobKind
	Limit    int
	Offset   int
}

// OutputChunk is one piece of a job's console output. Seq numbers start at
// 0 and have no gaps; Offset is the byte offset of Data in the whole output.
type OutputChunk struct {
	Seq    int64
	Offset int64
	Data   []byte
}

// JobOutput is a read of a job's console output from a byte offset.
type JobOutput struct {
	JobID    string
	Status   JobStatus
	Output   []byte
	Offset   int64 // next offset to ask for
	Complete bool  // the job is final and every byte was returned
}
