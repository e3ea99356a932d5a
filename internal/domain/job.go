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
// Terminal states (success, failed, aborted, blocked) never change again,
// with one exception: a final state the control plane decided without the
// worker (failed "worker vanished", aborted without an answer) gives way to
// the final state the worker reports afterwards (Job.Accepts). Only the
// terminal transitions release the server lock. The worker's reports may
// arrive in any order and through any replica: Job.Accepts, not the arrows
// above alone, decides what is applied (a worker's success applies to a
// job still pending in the database, too).
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

// FinalSource says who decided a job's final state.
type FinalSource string

// Final sources. A worker's report is what happened on the server; a
// control-plane decision (the reaper's "worker vanished", an abort no
// worker answered) is the control plane's best guess without one.
const (
	FinalByWorker  FinalSource = "worker"
	FinalByControl FinalSource = "control"
)

// StateReport is a state change to apply to a job: one a worker reported
// (WorkerID set, Seq its number for this job), or one the control plane
// decided (Control).
type StateReport struct {
	Status   JobStatus
	WorkerID string
	// Seq numbers a job's state reports in the order the worker sent them
	// (1, 2, …); 0 means unnumbered (an older worker, the simulator).
	Seq     int64
	Control bool
}

// stateRank orders the active states: a report never moves a job back.
func stateRank(s JobStatus) int {
	switch s {
	case JobPending:
		return 0
	case JobStarted:
		return 1
	case JobRunning:
		return 2
	}
	return 3
}

// Accepts reports whether r applies to a job in j's stored state. It is
// the one rule the ingest of every replica and the control plane follow,
// so a job converges to what its worker reported whatever order or
// replica the events take (docs/jobs.md "Convergence"):
//
//   - a report from a worker other than the one that claimed the job is
//     refused;
//   - a numbered report not newer than the last applied one is refused
//     (a redelivery, or a state overtaken by a later one);
//   - a worker's final state applies to any active job (pending → success
//     included: the claim's and the running event's rows may land after
//     it) and replaces a final the control plane decided, because the
//     worker saw what happened on the server; it never replaces another
//     worker final;
//   - a control-plane final applies only to an active job: it never
//     replaces a worker's report;
//   - an intermediate state applies to an active job and only forwards
//     (pending → started → running).
func (j Job) Accepts(r StateReport) bool {
	if !r.Status.Valid() || r.Status == JobPending || r.Status == JobBlocked {
		return false
	}
	if r.WorkerID != "" && j.WorkerID != "" && r.WorkerID != j.WorkerID {
		return false
	}
	if r.Seq > 0 && r.Seq <= j.StateSeq {
		return false
	}
	if r.Status.Terminal() {
		if j.Status.Active() {
			return true
		}
		return !r.Control && j.Status.Terminal() && j.FinalBy == FinalByControl
	}
	return !r.Control && j.Status.Active() && stateRank(r.Status) > stateRank(j.Status)
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
	// StateSeq is the Seq of the last state report applied; FinalBy who
	// decided the final state ("" while the job is active).
	StateSeq int64
	FinalBy  FinalSource
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
