package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// credsTimeout bounds one credential answer (DB claim + decrypt + seal).
const credsTimeout = 10 * time.Second

// credsWaiting is how many credential requests one replica holds at once
// (each a goroutine waiting for its batch); further ones wait in the
// subscription. A fleet-wide run's workers ask for hundreds at once.
const credsWaiting = 1024

// credsBatch bounds the requests answered together: one read of the jobs,
// one claim transaction, one read of the servers. While a batch is
// answered the next one gathers, so under load the batches grow by
// themselves and a lone request is answered at once.
const credsBatch = 256

// credReq is one credential request waiting for its batch.
type credReq struct {
	req   bus.CredsRequest
	reply chan bus.CredsReply
}

// ServeCredentials answers credential requests (queue group: one replica
// answers each) until stop is called, in batches (credsBatch). An answer is
// given only for a job that this request claims or that the same worker
// already claimed, whose server matches and whose segment is the one the
// worker consumed it from; the credentials are sealed to the worker's
// public key and exist in plaintext only in this process's memory for the
// batch.
func (s *Service) ServeCredentials() (stop func(), err error) {
	queue := make(chan credReq, credsWaiting)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for first := range queue {
			batch := []credReq{first}
		gather:
			for len(batch) < credsBatch {
				select {
				case r, ok := <-queue:
					if !ok {
						break gather
					}
					batch = append(batch, r)
				default:
					break gather
				}
			}
			safe.Do("credential batch", func() { s.answerBatch(batch) })
			for _, r := range batch {
				select {
				case r.reply <- bus.CredsReply{Code: "internal", Error: "credentials unavailable"}:
				default: // answered
				}
			}
		}
	}()
	stopServe, err := s.bus.ServeConcurrently(bus.SubjectCredsRequest, bus.QueueCreds, credsWaiting, func(data []byte) []byte {
		var req bus.CredsRequest
		reply := bus.CredsReply{Code: "invalid", Error: "malformed credential request"}
		if err := json.Unmarshal(data, &req); err == nil && req.V <= bus.MessageVersion && req.JobID != "" && len(req.PublicKey) == 32 {
			ch := make(chan bus.CredsReply, 1)
			queue <- credReq{req: req, reply: ch}
			reply = <-ch
		}
		reply.V, reply.Type = bus.MessageVersion, bus.TypeCredsRes
		out, _ := json.Marshal(reply)
		return out
	})
	if err != nil {
		close(queue)
		<-done
		return nil, err
	}
	return func() {
		stopServe()
		close(queue)
		<-done
	}, nil
}

// answerBatch answers a batch of credential requests; each reply channel
// gets exactly one answer (a request left unanswered by a panic gets a
// generic refusal from ServeCredentials).
func (s *Service) answerBatch(batch []credReq) {
	ctx, cancel := context.WithTimeout(context.Background(), credsTimeout)
	defer cancel()
	answer := func(i int, r bus.CredsReply) { batch[i].reply <- r }
	// A job asked for twice in one batch (a worker's retry) is answered
	// after the first, on its own, so it sees the first one's claim and
	// pending key.
	seen := map[string]bool{}
	var ids []string
	var later []int
	for i, b := range batch {
		if seen[b.req.JobID] {
			later = append(later, i)
			continue
		}
		seen[b.req.JobID] = true
		ids = append(ids, b.req.JobID)
	}
	defer func() {
		for _, i := range later {
			answer(i, s.answerOne(ctx, batch[i].req))
		}
	}()
	states, err := s.store.JobStates(ctx, ids)
	if err != nil {
		for i := range batch {
			if !slices.Contains(later, i) {
				answer(i, refuse(err))
			}
		}
		return
	}
	var claims []store.Claim
	var idx []int // claims[k] is batch[idx[k]]
	for i, b := range batch {
		if slices.Contains(later, i) {
			continue
		}
		job, ok := states[b.req.JobID]
		switch {
		case !ok:
			answer(i, refuse(domain.NotFound("job")))
			continue
		case job.Segment != b.req.Segment:
			s.log.Warn("creds: segment mismatch", "job_id", job.ID, "worker", b.req.WorkerID, "job_segment", job.Segment, "worker_segment", b.req.Segment)
			answer(i, bus.CredsReply{Code: "forbidden", Error: "job is not in the worker's segment"})
			continue
		}
		claims = append(claims, store.Claim{JobID: b.req.JobID, ServerID: b.req.ServerID, WorkerID: b.req.WorkerID})
		idx = append(idx, i)
	}
	res, err := s.store.ClaimJobs(ctx, claims, s.now())
	if err != nil {
		for _, i := range idx {
			answer(i, refuse(err))
		}
		return
	}
	srvIDs := make([]string, 0, len(res))
	for _, r := range res {
		if r.Err == nil {
			srvIDs = append(srvIDs, r.Job.ServerID)
		}
	}
	srvs, secs, err := s.store.ServerSecretsOfMany(ctx, srvIDs)
	if err != nil {
		for _, i := range idx {
			answer(i, refuse(err))
		}
		return
	}
	// Without the digests every job sends its whole inventory: slower,
	// never wrong.
	digests, err := s.store.InventoryDigests(ctx, srvIDs)
	if err != nil {
		s.log.Warn("creds: inventory digests unavailable", "err", err)
	}
	for k, r := range res {
		i := idx[k]
		if r.Err != nil {
			answer(i, refuse(r.Err))
			continue
		}
		srv, ok := srvs[r.Job.ServerID]
		if !ok {
			answer(i, refuse(domain.NotFound("server")))
			continue
		}
		answer(i, s.sealCreds(ctx, batch[i].req, r.Job, srv, secs[srv.ID], digests[srv.ID]))
	}
}

// answerOne answers a single request on its own: the claim, the server's
// secrets, the seal.
func (s *Service) answerOne(ctx context.Context, req bus.CredsRequest) bus.CredsReply {
	job, err := s.store.JobState(ctx, req.JobID)
	if err != nil {
		return refuse(err)
	}
	if job.Segment != req.Segment {
		return bus.CredsReply{Code: "forbidden", Error: "job is not in the worker's segment"}
	}
	if job, err = s.store.ClaimJob(ctx, req.JobID, req.ServerID, req.WorkerID, s.now()); err != nil {
		return refuse(err)
	}
	srv, sec, err := s.store.ServerSecretsOf(ctx, job.ServerID)
	if err != nil {
		return refuse(err)
	}
	digests, _ := s.store.InventoryDigests(ctx, []string{srv.ID})
	return s.sealCreds(ctx, req, job, srv, sec, digests[srv.ID])
}

// sealCreds completes and seals one claimed job's credentials.
func (s *Service) sealCreds(ctx context.Context, req bus.CredsRequest, job domain.Job, srv domain.Server, sec store.ServerSecrets, digest string) bus.CredsReply {
	var err error
	if (job.Kind == domain.JobJoin || job.Kind == domain.JobRotateKey) && sec.PendingKey == "" {
		// The server's new key is generated when its job is claimed, under
		// the server lock, so concurrent requests can never swap it.
		if sec.PendingKey, err = actions.NewManagementKey("lcm@" + srv.ID); err != nil {
			return bus.CredsReply{Code: "internal", Error: "key generation failed"}
		}
		if err := s.store.SetPendingKey(ctx, srv.ID, sec.PendingKey); err != nil {
			return refuse(err)
		}
	}
	c := credentialsFor(job, srv, sec)
	c.InventoryDigest = digest
	s.mu.RLock()
	supply := s.secrets[job.Kind]
	s.mu.RUnlock()
	if supply != nil {
		if c.Secrets, err = supply(ctx, job); err != nil {
			s.log.Error("creds: job secrets unavailable", "job_id", job.ID, "kind", job.Kind, "err", err)
			return bus.CredsReply{Code: "internal", Error: "job secrets unavailable"}
		}
	}
	if srv.Transport == domain.TransportAgent {
		ag, err := s.store.AgentOf(ctx, srv.ID)
		if err != nil {
			return refuse(err)
		}
		if ag.AgentID == "" {
			return bus.CredsReply{Code: "not_claimable", Error: "the server has no enrolled agent: issue an agent token and enroll lcm-agent"}
		}
		c.AgentID = ag.AgentID
	}
	sealed, err := credbox.Seal(c, req.PublicKey)
	if err != nil {
		s.log.Error("creds: seal failed", "job_id", job.ID, "err", err)
		return bus.CredsReply{Code: "internal", Error: "credentials could not be sealed"}
	}
	s.announce(job)
	return bus.CredsReply{OK: true, Sealed: sealed}
}

func refuse(err error) bus.CredsReply {
	var de *domain.Error
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return bus.CredsReply{Code: "not_found", Error: "job or server not found"}
	case errors.As(err, &de) && de.Code == "not_claimable":
		return bus.CredsReply{Code: "not_claimable", Error: de.Message}
	}
	return bus.CredsReply{Code: "internal", Error: "credentials unavailable"}
}

// credentialsFor picks the login a job needs: the bootstrap credentials
// for a join, the management key otherwise (with the pending key for a
// join or rotation to install and prove).
func credentialsFor(job domain.Job, srv domain.Server, sec store.ServerSecrets) credbox.Credentials {
	c := credbox.Credentials{JobID: job.ID, ServerID: srv.ID, Addr: srv.Addr(), HostKey: srv.HostKey,
		CredVersion: sec.CredVersion, PackageFamily: srv.PackageFamily, SudoMode: srv.Hardening.SudoMode}
	switch job.Kind {
	case domain.JobJoin:
		c.User, c.PrivateKey, c.Password = sec.BootstrapUser, sec.BootstrapKey, sec.BootstrapPassword
		if sec.BootstrapUser != "root" {
			c.SudoPassword = sec.BootstrapPassword
		}
		c.NewPrivateKey = sec.PendingKey
	default:
		c.User, c.PrivateKey, c.Password = sec.Username, sec.PrivateKey, sec.LoginPassword
		if job.Kind == domain.JobRotateKey {
			c.NewPrivateKey = sec.PendingKey
		}
	}
	return c
}
