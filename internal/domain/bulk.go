package domain

import "time"

// Bulk target kinds: which servers a bulk run was asked for.
const (
	BulkTargetServers = "servers" // an explicit selection of server ids
	BulkTargetGroup   = "group"   // every server of one group
	BulkTargetAll     = "all"     // every server the caller may manage
)

// BulkRun is one request that ran an action on many servers: one job per
// server, or a refusal saying why that server got none.
type BulkRun struct {
	ID        string
	Action    string // the bulk action name ("upgrade-security", "refresh", …)
	Kind      JobKind
	Target    string // BulkTarget*
	GroupID   string
	CreatedBy string
	CreatedAt time.Time
	Items     []BulkItem
}

// BulkItem is one server of a bulk run: its job, or why it has none.
type BulkItem struct {
	ServerID   string
	ServerName string
	JobID      string    // "" when refused
	Status     JobStatus // the job's current status; "" when refused
	Refused    string    // refusal code: not_joined, server_busy, unsupported_action, bus_unavailable
	Reason     string    // refusal in plain words
}

// BulkProgress counts a bulk run's servers per job status, plus refusals.
type BulkProgress struct {
	Total   int               // servers in the run (jobs + refused)
	Jobs    int               // jobs started
	Refused int               // servers that got no job
	Counts  map[JobStatus]int // jobs per status
	Done    bool              // no job is pending, started or running
}

// Progress computes the run's counts from its items.
func (r BulkRun) Progress() BulkProgress {
	p := BulkProgress{Total: len(r.Items), Counts: map[JobStatus]int{}}
	for _, st := range JobStatuses {
		p.Counts[st] = 0
	}
	active := 0
	for _, it := range r.Items {
		if it.JobID == "" {
			p.Refused++
			continue
		}
		p.Jobs++
		p.Counts[it.Status]++
		if it.Status.Active() {
			active++
		}
	}
	p.Done = active == 0
	return p
}
