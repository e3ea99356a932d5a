package bus

// User is an account of a listening embedded NATS server. Permissions nil
// means every right.
type User struct {
	Name, Password string
	Permissions    *Permissions
}

// Permissions restrict what a User may publish and subscribe to.
type Permissions struct {
	Publish, Subscribe []string
	// ResponseMaxMsgs lets the user answer requests sent to it (replies
	// to _INBOX subjects it was not granted), this many per request.
	ResponseMaxMsgs int
}

// FullUser is a NATS user with every permission (the API's own user on a
// listening embedded server).
func FullUser(name, password string) User {
	return User{Name: name, Password: password}
}

// WorkerUser is a least-privilege NATS user for a remote lcm-worker: it may
// consume only its segments' jobs (its durables on JOBS), publish job
// events and credential requests, refresh server locks, and receive abort
// requests. It cannot read the job-event stream, other segments' jobs or
// any other bucket. (Per-job publish rights would need per-job users; the
// API ignores events from a worker that does not own the job.)
func WorkerUser(name, password string, segments []string) User {
	pub := []string{
		"lcm.job.*.out", "lcm.job.*.state", SubjectCredsRequest,
		// Jobs on agent servers: commands out, results back (agentgw.Executor).
		AgentSubject("*", "cmd"),
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + "KV_" + BucketLocks, "$KV." + BucketLocks + ".>",
		"$JS.API.DIRECT.GET.KV_" + BucketLocks + ".>", "$JS.API.STREAM.MSG.GET.KV_" + BucketLocks,
	}
	for _, s := range segments {
		d := WorkerConsumer(s)
		pub = append(pub,
			"$JS.API.CONSUMER.CREATE."+StreamJobs+"."+d+".>", "$JS.API.CONSUMER.CREATE."+StreamJobs+"."+d,
			"$JS.API.CONSUMER.DURABLE.CREATE."+StreamJobs+"."+d,
			"$JS.API.CONSUMER.INFO."+StreamJobs+"."+d, "$JS.API.CONSUMER.MSG.NEXT."+StreamJobs+"."+d,
			"$JS.ACK."+StreamJobs+"."+d+".>")
	}
	return User{Name: name, Password: password, Permissions: &Permissions{
		Publish: pub, Subscribe: []string{"_INBOX.>", "lcm.jobctl.*", AgentSubject("*", "res")}, ResponseMaxMsgs: 1,
	}}
}

// AgentGatewayUser is the least-privilege NATS user of lcm-agentgw: it may
// bridge agent messages (publish res/inv/status, receive cmd and kick for
// every agent) and read and compare-and-swap records of the agent
// credential bucket. It cannot touch the job streams, other buckets, or
// create, update or delete any stream or consumer.
//
// The JetStream API subjects are exactly those nats.go's KeyValue uses for
// one bucket: STREAM.INFO to bind it, DIRECT.GET (and STREAM.MSG.GET for a
// bucket without direct get) to read a key, and publishing to $KV.<bucket>.<key>
// for Create/Update, whose acknowledgement comes back on _INBOX.
func AgentGatewayUser(name, password string) User {
	stream := "KV_" + BucketAgents
	return User{Name: name, Password: password, Permissions: &Permissions{
		Publish: []string{
			AgentSubject("*", "res"), AgentSubject("*", "inv"), AgentSubject("*", "status"),
			"$JS.API.STREAM.INFO." + stream,
			"$JS.API.DIRECT.GET." + stream + ".>", "$JS.API.STREAM.MSG.GET." + stream,
			"$KV." + BucketAgents + ".>",
		},
		Subscribe: []string{"_INBOX.>", AgentSubject("*", "cmd"), AgentSubject("*", "kick")},
	}}
}

// ScannerUser is the least-privilege NATS user of lcm-scanner: it answers
// scan and status requests (queue group QueueScanners), hears database
// updates, reads the uploaded OSV exports from the LCM_VULNDB object store
// and writes results too large for a reply into it. It cannot touch jobs,
// job events, the credential subject, agents, KV buckets or create, update
// or delete any stream.
//
// The JetStream API subjects are those nats.go's ObjectStore uses for one
// store: STREAM.INFO to bind it, MSG.GET/DIRECT.GET for an object's meta,
// ordered (ephemeral) consumers with their flow control ($JS.FC) to list
// and read chunks, and publishing chunks and meta under $O.<store> for a
// put. Results get a name of their own (no older version to purge), so
// the account has no STREAM.PURGE: it cannot wipe the uploaded databases.
// A scanner could overwrite an object's meta; it is a process of the
// control plane, not of a managed server.
func ScannerUser(name, password string) User {
	stream := "OBJ_" + BucketVulnDB
	return User{Name: name, Password: password, Permissions: &Permissions{
		Publish: []string{
			"$JS.API.INFO",
			"$JS.API.STREAM.INFO." + stream,
			"$JS.API.STREAM.MSG.GET." + stream, "$JS.API.DIRECT.GET." + stream + ".>",
			"$JS.API.CONSUMER.CREATE." + stream, "$JS.API.CONSUMER.CREATE." + stream + ".>",
			"$JS.API.CONSUMER.INFO." + stream + ".>", "$JS.API.CONSUMER.DELETE." + stream + ".>",
			"$JS.API.CONSUMER.MSG.NEXT." + stream + ".>", "$JS.ACK." + stream + ".>",
			"$JS.FC." + stream + ".>",
			"$O." + BucketVulnDB + ".>",
		},
		Subscribe:       []string{"_INBOX.>", SubjectScanRequest, SubjectScanStatus, SubjectScanDBUpdated},
		ResponseMaxMsgs: 1,
	}}
}
