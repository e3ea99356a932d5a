// Package bus is LCM's NATS JetStream adapter: the embedded server of the
// all-in-one mode, the connection to an external cluster, and — in this file
// — the single source of truth for every stream, subject and KV bucket.
package bus

import "fmt"

// Streams.
const (
	// StreamJobs is the work queue of jobs; a message is removed once a
	// worker acks it. Subject lcm.jobs.<segment>.<serverID>.
	StreamJobs = "JOBS"
	// StreamJobEvents carries console output chunks and state changes of jobs.
	// Subjects lcm.job.<jobID>.out and lcm.job.<jobID>.state.
	StreamJobEvents = "JOBEVENTS"
)

// Subject patterns and templates.
const (
	SubjectJobsAll      = "lcm.jobs.>"
	SubjectJobEventsAll = "lcm.job.>"
	// SubjectCredsRequest is request/reply: a worker asks for the sealed
	// credentials of (job, server) at execution time.
	SubjectCredsRequest = "lcm.creds.req"
	// QueueCreds is the queue group of the API replicas answering
	// credential requests: exactly one replica answers each.
	QueueCreds = "api-creds"
	// SubjectScanRequest is request/reply (ScanRequest → ScanResult):
	// one scanner of QueueScanners matches one SBOM.
	SubjectScanRequest = "lcm.scan.req"
	// SubjectScanResult is reserved for asynchronous results.
	SubjectScanResult = "lcm.scan.res"
	// SubjectScanStatus is request/reply (empty → ScannerStatus): one
	// scanner reports its engine and database.
	SubjectScanStatus = "lcm.scan.status"
	// SubjectScanDBUpdated tells every scanner (no queue group) that the
	// object store BucketVulnDB changed: each syncs and reloads.
	SubjectScanDBUpdated = "lcm.scan.db"
	// QueueScanners is the queue group of the scanners: several share the work.
	QueueScanners = "scanners"
	// SubjectSettingsChanged announces a runtime-settings change to replicas.
	SubjectSettingsChanged = "lcm.settings.changed"
	// SubjectRecordsChanged announces committed zone changes (payload
	// RecordsChanged) so every replica's DNS listener rebuilds those zones.
	SubjectRecordsChanged = "lcm.records.changed"
	// SubjectFleetChanged announces a committed change to servers, their
	// status or group links (payload FleetChanged) so every replica drops
	// its cached server listing.
	SubjectFleetChanged = "lcm.fleet.changed"
)

// JobSubject is where a job for a server in a segment is published.
func JobSubject(segment, serverID string) string {
	return fmt.Sprintf("lcm.jobs.%s.%s", segment, serverID)
}

// JobSegmentFilter is a worker's consumer filter for one segment.
func JobSegmentFilter(segment string) string { return "lcm.jobs." + segment + ".>" }

// JobOutputSubject carries console output chunks of one job.
func JobOutputSubject(jobID string) string { return "lcm.job." + jobID + ".out" }

// JobStateSubject carries state changes and heartbeats of one job.
func JobStateSubject(jobID string) string { return "lcm.job." + jobID + ".state" }

// JobControlSubject carries control requests (abort) to the worker running
// a job. Core NATS request/reply only, in no stream: a control message for a
// job no worker runs has no one to reach.
func JobControlSubject(jobID string) string { return "lcm.jobctl." + jobID }

// JobEventsOf matches both event subjects of one job (live fan-out).
func JobEventsOf(jobID string) string { return "lcm.job." + jobID + ".*" }

// AgentSubject is the subject of an agent's channel (cmd, res, inv, status).
func AgentSubject(agentID, channel string) string { return "lcm.agent." + agentID + "." + channel }

// KV buckets for cluster-wide state.
const (
	// BucketLocks holds one key per busy server (job lock), kept alive by
	// the worker's heartbeat and expiring with the bucket TTL.
	BucketLocks = "LCM_LOCKS"
	// BucketLeader holds the scheduler leader lease.
	BucketLeader = "LCM_LEADER"
	// BucketRateLimit holds API-key fixed windows.
	BucketRateLimit = "LCM_RATELIMIT"
	// BucketLockout holds login lockout counters (IP and account).
	BucketLockout = "LCM_LOCKOUT"
	// BucketAuth holds the cluster auth epoch (the per-start nonce shared by replicas).
	BucketAuth = "LCM_AUTH"
	// BucketVulnDB is an object store holding uploaded OSV exports,
	// object name "<ecosystem>/all.zip"; scanners copy them to their disk.
	BucketVulnDB = "LCM_VULNDB"
	// BucketAgents holds agent credential hashes for the gateway.
	BucketAgents = "LCM_AGENTS"
)

// Durable consumers.
const (
	// ConsumerIngest is the API's durable, shared by replicas, that stores
	// job events exactly once.
	ConsumerIngest = "api-ingest"
)

// WorkerConsumer is the durable of the workers serving one segment; workers
// of the same segment share it so each job goes to exactly one of them.
func WorkerConsumer(segment string) string { return "worker-" + segment }
