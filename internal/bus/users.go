package bus

import "github.com/nats-io/nats-server/v2/server"

// FullUser is a NATS user with every permission (the API's own user on a
// listening embedded server).
func FullUser(name, password string) *server.User {
	return &server.User{Username: name, Password: password}
}

// WorkerUser is a least-privilege NATS user for a remote lcm-worker: it may
// consume only its segments' jobs (its durables on JOBS), publish job
// events and credential requests, refresh server locks, and receive abort
// requests. It cannot read the job-event stream, other segments' jobs or
// any other bucket. (Per-job publish rights would need per-job users; the
// API ignores events from a worker that does not own the job.)
func WorkerUser(name, password string, segments []string) *server.User {
	pub := []string{
		"lcm.job.*.out", "lcm.job.*.state", SubjectCredsRequest,
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
	return &server.User{Username: name, Password: password, Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", "lcm.jobctl.*"}},
		Response:  &server.ResponsePermission{MaxMsgs: 1},
	}}
}
