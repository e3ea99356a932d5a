// Package fleet is the servers-and-groups service: probe, join (as a job),
// settings, reconnect, key rotation, decommission, server groups and their
// managers. Every read and change is scoped to the caller: a manager
// reaches only the servers of its groups, an admin all of them.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/store"
)

// probeTimeout bounds a host-key probe: dial plus key exchange take
// milliseconds on a LAN; 15 s covers a slow WAN without hanging the UI.
const probeTimeout = 15 * time.Second

// rollbackTimeout bounds undoing a join whose job could not be submitted:
// it runs even after the request's deadline, but must not hang on a
// database that stopped answering.
const rollbackTimeout = 10 * time.Second

// Service manages servers and groups.
type Service struct {
	store *store.Store
	jobs  *jobs.Service
	log   *slog.Logger
	// deleted are told about every removed server (see OnDeleted).
	deleted []DeletedHook
	// membership are told about servers joining and leaving groups.
	membership []MembershipHook
	// agents is the agent transport (SetAgents); nil: agent servers
	// cannot get tokens.
	agents *AgentConfig
}

// New returns the service and registers its job finish hooks.
func New(st *store.Store, js *jobs.Service, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	s := &Service{store: st, jobs: js, log: log}
	js.OnFinish(domain.JobJoin, s.afterKeyJob)
	js.OnFinish(domain.JobRotateKey, s.afterKeyJob)
	js.OnFinish(domain.JobConnectivity, s.afterCheck)
	js.OnFinish(domain.JobReconnect, s.afterCheck)
	js.OnFinish(domain.JobDecommission, s.afterDecommission)
	s.registerHardening()
	return s
}

// ProbeResult is a server's host key as presented to the operator.
type ProbeResult struct {
	Host              string
	Port              int
	KeyType           string
	FingerprintSHA256 string
	HostKey           string // authorized-keys line to confirm and pin
}

// Probe connects to host:port and returns its host key without logging in.
func (s *Service) Probe(ctx context.Context, host string, port int) (ProbeResult, error) {
	host = strings.TrimSpace(host)
	if port == 0 {
		port = 22
	}
	if err := validHostPort(host, port); err != nil {
		return ProbeResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	key, fp, err := sshexec.Probe(ctx, net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return ProbeResult{}, domain.Invalid("probe_failed", remote.Explain(err))
	}
	return ProbeResult{Host: host, Port: port, KeyType: key.Type(), FingerprintSHA256: fp, HostKey: sshexec.AuthorizedKey(key)}, nil
}

func validHostPort(host string, port int) error {
	if host == "" || len(host) > 253 || strings.ContainsAny(host, " /\\@") {
		return domain.Invalid("invalid_host", "host must be a host name or IP address")
	}
	if port < 1 || port > 65535 {
		return domain.Invalid("invalid_port", "port must be between 1 and 65535")
	}
	return nil
}

// JoinRequest is what an operator gives to onboard a server.
type JoinRequest struct {
	Name, Host string
	Port       int
	Username   string // bootstrap user
	Auth       string // domain.AuthKey or domain.AuthPassword
	PrivateKey string
	Password   string
	HostKey    string // the probed authorized-keys line the operator confirmed
	GroupIDs   []string
	Segment    string
}

// Join stores a new server and starts its join job: the job creates the
// management user with its own key and sudo rule, proves them and pins the
// host key. Nothing is stored if the job cannot be submitted.
func (s *Service) Join(ctx context.Context, p *domain.Principal, r JoinRequest) (domain.Server, domain.Job, error) {
	if err := s.validateJoin(ctx, p, &r); err != nil {
		return domain.Server{}, domain.Job{}, err
	}
	pin, _, _, _, _ := ssh.ParseAuthorizedKey([]byte(r.HostKey))
	srv := domain.Server{Name: r.Name, Host: r.Host, Port: r.Port, Transport: domain.TransportSSH, Segment: r.Segment,
		GroupIDs: r.GroupIDs, Status: domain.ServerUnknown, AuthMethod: r.Auth,
		HostKey: sshexec.AuthorizedKey(pin), HostKeyFingerprint: ssh.FingerprintSHA256(pin)}
	sec := store.ServerSecrets{BootstrapUser: r.Username, Username: r.Username}
	if r.Auth == domain.AuthKey {
		sec.BootstrapKey = r.PrivateKey
	} else {
		sec.BootstrapPassword = r.Password
		// Devices with password authentication keep their login password.
		sec.LoginPassword = r.Password
	}
	srv, err := s.store.CreateServer(ctx, store.NewServer{Server: srv, Secrets: sec})
	if err != nil {
		return domain.Server{}, domain.Job{}, err
	}
	job, err := s.jobs.Submit(ctx, p, srv.ID, domain.JobJoin, nil)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if derr := s.store.DeleteServer(rctx, srv.ID); derr != nil {
			s.log.Error("join rollback failed", "server_id", srv.ID, "err", derr)
		}
		return domain.Server{}, domain.Job{}, err
	}
	srv.ActiveJobID = job.ID
	return srv, job, nil
}

func (s *Service) validateJoin(ctx context.Context, p *domain.Principal, r *JoinRequest) error {
	r.Name, r.Host, r.Username = strings.TrimSpace(r.Name), strings.TrimSpace(r.Host), strings.TrimSpace(r.Username)
	if r.Port == 0 {
		r.Port = 22
	}
	if err := validName(r.Name); err != nil {
		return err
	}
	if err := validHostPort(r.Host, r.Port); err != nil {
		return err
	}
	if r.Username == "" || len(r.Username) > 64 || strings.ContainsAny(r.Username, " :/'\"") {
		return domain.Invalid("invalid_username", "username is required (the bootstrap login)")
	}
	switch r.Auth {
	case domain.AuthKey:
		if _, err := ssh.ParsePrivateKey([]byte(r.PrivateKey)); err != nil {
			return domain.Invalid("invalid_private_key", "private_key must be an unencrypted OpenSSH or PEM private key")
		}
	case domain.AuthPassword:
		if r.Password == "" {
			return domain.Invalid("missing_password", "password is required for auth \"password\"")
		}
	default:
		return domain.Invalid("invalid_auth", `auth must be "key" or "password"`)
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(r.HostKey)); err != nil {
		return domain.Invalid("invalid_host_key", "host_key must be the probed key line (\"ssh-ed25519 AAAA…\") the operator confirmed")
	}
	return s.checkPlacement(ctx, p, r.GroupIDs, r.Segment)
}

// checkPlacement validates the segment and groups of a new server: an
// admin may use any existing group, a manager must name at least one and
// only groups it manages.
func (s *Service) checkPlacement(ctx context.Context, p *domain.Principal, groupIDs []string, segment string) error {
	if segment != "" && !domain.ValidSegment(segment) {
		return domain.Invalid("invalid_segment", "segment may contain letters, digits, - and _ only")
	}
	if p.IsAdmin() {
		for _, g := range groupIDs {
			if _, err := s.store.GetGroup(ctx, store.SystemScope, g); err != nil {
				return err
			}
		}
		return nil
	}
	if len(groupIDs) == 0 {
		return domain.Invalid("group_required", "a manager must place a new server in one of its groups")
	}
	for _, g := range groupIDs {
		if _, err := s.store.GetGroup(ctx, store.ScopeOf(p), g); err != nil {
			return err
		}
	}
	return nil
}

func validName(n string) error {
	if n == "" || len(n) > 128 {
		return domain.Invalid("invalid_name", "name is required (at most 128 characters)")
	}
	return nil
}

// Get returns a visible server.
func (s *Service) Get(ctx context.Context, p *domain.Principal, id string) (domain.Server, error) {
	return s.store.GetServer(ctx, store.ScopeOf(p), id)
}

// List returns the visible servers.
func (s *Service) List(ctx context.Context, p *domain.Principal, f store.ServerFilter) ([]domain.Server, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, domain.Invalid("invalid_status", fmt.Sprintf("unknown server status %q", f.Status))
	}
	return s.store.ListServers(ctx, store.ScopeOf(p), f)
}

// SeesWholeFleet reports whether p's listings are unscoped (admin).
func SeesWholeFleet(p *domain.Principal) bool { return store.ScopeOf(p).All() }

// Version is the state of what a server listing shows, active jobs aside
// (store.FleetVersion). Read it before the reads a cache is built from.
func (s *Service) Version() store.FleetVersion { return s.store.FleetVersion() }

// ChangesSince lists the servers changed after v; ok is false when a
// cache built at v must be rebuilt whole (store.FleetChangesSince).
func (s *Service) ChangesSince(v store.FleetVersion) (cur store.FleetVersion, ids []string, ok bool) {
	return s.store.FleetChangesSince(v)
}

// MaxByID is the most servers ByID reads at once.
const MaxByID = 500

// ByID returns those of ids that exist and are visible to p (at most
// MaxByID).
func (s *Service) ByID(ctx context.Context, p *domain.Principal, ids []string) ([]domain.Server, error) {
	return s.store.ServersByID(ctx, store.ScopeOf(p), ids)
}

// ActiveJobs maps each visible server with a pending or running job to
// the job's id.
func (s *Service) ActiveJobs(ctx context.Context, p *domain.Principal) (map[string]string, error) {
	return s.store.ActiveJobIDs(ctx, store.ScopeOf(p))
}

// UpdateSettings changes a visible server's name, port or segment.
func (s *Service) UpdateSettings(ctx context.Context, p *domain.Principal, id string, set store.ServerSettings) (domain.Server, error) {
	if set.Name != nil {
		n := strings.TrimSpace(*set.Name)
		if err := validName(n); err != nil {
			return domain.Server{}, err
		}
		set.Name = &n
	}
	if set.Port != nil && (*set.Port < 1 || *set.Port > 65535) {
		return domain.Server{}, domain.Invalid("invalid_port", "port must be between 1 and 65535")
	}
	if set.Segment != nil && *set.Segment != "" && !domain.ValidSegment(*set.Segment) {
		return domain.Server{}, domain.Invalid("invalid_segment", "segment may contain letters, digits, - and _ only")
	}
	return s.store.UpdateServerSettings(ctx, store.ScopeOf(p), id, set)
}

// Reconnect drops every pooled connection to the server (new credential
// version) and runs a connectivity check.
func (s *Service) Reconnect(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	if _, err := s.store.GetServer(ctx, store.ScopeOf(p), id); err != nil {
		return domain.Job{}, err
	}
	if err := s.store.BumpCredVersion(ctx, id); err != nil {
		return domain.Job{}, err
	}
	return s.jobs.Submit(ctx, p, id, domain.JobReconnect, nil)
}

// CheckConnectivity runs a connectivity check job.
func (s *Service) CheckConnectivity(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	return s.jobs.Submit(ctx, p, id, domain.JobConnectivity, nil)
}

// RotateKey replaces the management key (new key installed and proven
// before the old one is removed).
func (s *Service) RotateKey(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	return s.jobs.Submit(ctx, p, id, domain.JobRotateKey, nil)
}

// UpgradeSecurity installs security updates on a visible server.
// A package manager without a security channel (pacman, apk) is refused
// at once with pkgmgr's documented answer.
func (s *Service) UpgradeSecurity(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), id)
	if err != nil {
		return domain.Job{}, err
	}
	if srv.PackageFamily != "" {
		m, err := pkgmgr.New(pkgmgr.Family(srv.PackageFamily))
		if err != nil {
			return domain.Job{}, err
		}
		if _, err := m.UpgradeSecurity(); err != nil {
			var ue *pkgmgr.UnsupportedError
			if errors.As(err, &ue) {
				return domain.Job{}, &domain.Error{Kind: domain.ErrInvalid, Code: "no_security_channel", Message: ue.Answer}
			}
			return domain.Job{}, err
		}
	}
	return s.jobs.SubmitServer(ctx, p, srv, domain.JobUpgradeSecurity, nil)
}

// Decommission removes a server: a joined server first gets a best-effort
// job removing the management user's key and sudo rule, and is deleted
// when that job ends; a server that never joined is deleted at once.
func (s *Service) Decommission(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	srv, err := s.store.GetServer(ctx, store.ScopeOf(p), id)
	if err != nil {
		return domain.Job{}, err
	}
	if !srv.Joined {
		if srv.ActiveJobID != "" {
			return domain.Job{}, &jobs.BusyError{ServerID: id, JobID: srv.ActiveJobID}
		}
		return domain.Job{}, s.deleteServer(ctx, id)
	}
	return s.jobs.Submit(ctx, p, id, domain.JobDecommission, nil)
}

func (s *Service) afterKeyJob(ctx context.Context, job domain.Job) error {
	if job.Status != domain.JobSuccess {
		return s.store.DropPendingKey(ctx, job.ServerID)
	}
	if err := s.store.PromotePendingKey(ctx, job.ServerID, true); err != nil {
		return err
	}
	return s.recordFacts(ctx, job)
}

// afterCheck records what a successful check learned; the traffic light
// (also of a failed check) is computed by package status's finish hook.
func (s *Service) afterCheck(ctx context.Context, job domain.Job) error {
	if job.Status != domain.JobSuccess {
		return nil
	}
	return s.recordFacts(ctx, job)
}

func (s *Service) afterDecommission(ctx context.Context, job domain.Job) error {
	if job.Status != domain.JobSuccess {
		return nil
	}
	return s.deleteServer(ctx, job.ServerID)
}

func (s *Service) recordFacts(ctx context.Context, job domain.Job) error {
	var res actions.Result
	if len(job.Result) == 0 || json.Unmarshal(job.Result, &res) != nil || res.Facts == nil {
		return nil
	}
	f := res.Facts
	return s.store.RecordServerFacts(ctx, job.ServerID, store.ServerFacts{OSName: f.OSName, OSVersion: f.OSVersion,
		Kernel: f.Kernel, Virtualization: f.Virtualization, Hostname: f.Hostname, PkgFamily: f.PackageFamily})
}
