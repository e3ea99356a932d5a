package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// credsTimeout bounds one credential answer (DB claim + decrypt + seal).
const credsTimeout = 10 * time.Second

// credsConcurrency is how many credential requests one replica answers at
// once. An answer mostly waits on the database (a claim transaction, two
// reads); answered one at a time, the claims of a fleet-wide refresh on
// PostgreSQL queued behind each other at 15–20 ms each while the ingest
// kept the database busy, and the later ones timed out at the worker and
// were asked again. Eight in flight keep the database busy without
// crowding the 32-connection pool.
const credsConcurrency = 8

// credsStripes is the number of locks that serialise requests for the
// same job: with 8 in flight, 64 make a false wait rare.
const credsStripes = 64

// ServeCredentials answers credential requests (queue group: one replica
// answers each; up to credsConcurrency at once, requests for the same job
// one after the other) until stop is called. An answer is given only for a
// job that this request claims or that the same worker already claimed,
// whose server matches and whose segment is the one the worker consumed it
// from; the credentials are sealed to the worker's public key and exist in
// plaintext only in this function's memory.
func (s *Service) ServeCredentials() (stop func(), err error) {
	return s.bus.ServeConcurrently(bus.SubjectCredsRequest, bus.QueueCreds, credsConcurrency, func(data []byte) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), credsTimeout)
		defer cancel()
		reply := s.answerCreds(ctx, data)
		reply.V, reply.Type = bus.MessageVersion, bus.TypeCredsRes
		out, _ := json.Marshal(reply)
		return out
	})
}

func (s *Service) answerCreds(ctx context.Context, data []byte) bus.CredsReply {
	var req bus.CredsRequest
	if err := json.Unmarshal(data, &req); err != nil || req.V > bus.MessageVersion || req.JobID == "" || len(req.PublicKey) != 32 {
		return bus.CredsReply{Code: "invalid", Error: "malformed credential request"}
	}
	// A worker's retry may arrive while its first request is answered:
	// it must see the first one's claim and pending key, never make a
	// second key.
	mu := &s.credsMu[jobStripe(req.JobID)]
	mu.Lock()
	defer mu.Unlock()
	job, err := s.store.JobState(ctx, req.JobID)
	if err != nil {
		return refuse(err)
	}
	if job.Segment != req.Segment {
		s.log.Warn("creds: segment mismatch", "job_id", job.ID, "worker", req.WorkerID, "job_segment", job.Segment, "worker_segment", req.Segment)
		return bus.CredsReply{Code: "forbidden", Error: "job is not in the worker's segment"}
	}
	job, err = s.store.ClaimJob(ctx, req.JobID, req.ServerID, req.WorkerID, s.now())
	if err != nil {
		return refuse(err)
	}
	srv, sec, err := s.store.ServerSecretsOf(ctx, job.ServerID)
	if err != nil {
		return refuse(err)
	}
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

// jobStripe picks the credsMu of a job.
func jobStripe(jobID string) int {
	h := fnv.New32a()
	h.Write([]byte(jobID))
	return int(h.Sum32() % credsStripes)
}
