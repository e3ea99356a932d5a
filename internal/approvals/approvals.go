// Package approvals is LCM's four-eyes mechanism: an action that needs a
// second person's approval is parked as a pending approval (kind, the id
// of the waiting object, a payload describing what was requested, the
// requester); someone else holding the kind's permission approves or
// rejects it with a comment before it expires. Every request and decision
// is audited. The requester can never decide their own request — an API
// key acts as its owner, so a key cannot approve what its owner asked for.
//
// The package is generic. A feature attaches itself with Register:
//
//	approvals.Register("schedule", approvals.Kind{
//		Permission: domain.PermRulesManage,
//		Visible:    func(ctx, p, a) bool { … may p see a.RefID? … },
//		Decided:    func(ctx, a) error { … a.Status approved: enable it; else drop it … },
//	})
//
// then, where the action would start, calls Request and holds the object
// until Decided runs (exactly once per approval: decisions are a
// compare-and-set on the pending row). Rollouts use kind "rollout".
package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// DefaultTTL is how long an approval waits before it expires.
const DefaultTTL = 24 * time.Hour

// MaxComment bounds a decision's comment.
const MaxComment = 2000

// Kind is what a feature registers for its approvals.
type Kind struct {
	// Permission is what an approver must hold (besides not being the
	// requester).
	Permission string
	// Visible reports whether p may see (and so decide) the approval; nil
	// lets everyone holding Permission see it.
	Visible func(ctx context.Context, p *domain.Principal, a domain.Approval) bool
	// Decided runs once the approval left pending (approved, rejected or
	// expired).
	Decided func(ctx context.Context, a domain.Approval) error
}

// Service keeps approvals.
type Service struct {
	store *store.Store
	log   *slog.Logger
	now   func() time.Time
	// TTL is the expiry of new approvals (DefaultTTL).
	TTL time.Duration

	mu    sync.RWMutex
	kinds map[string]Kind
}

// New returns the service.
func New(st *store.Store, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, log: log, now: func() time.Time { return time.Now().UTC() }, TTL: DefaultTTL, kinds: map[string]Kind{}}
}

// SetClock replaces the clock (tests).
func (s *Service) SetClock(now func() time.Time) { s.now = now }

// Register attaches a kind.
func (s *Service) Register(kind string, k Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kinds[kind] = k
}

func (s *Service) kind(name string) (Kind, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.kinds[name]
	return k, ok
}

// Request parks an action of kind on refID for approval and audits the
// request. payload is shown to approvers.
func (s *Service) Request(ctx context.Context, p *domain.Principal, kind, refID, summary string, payload any) (domain.Approval, error) {
	k, ok := s.kind(kind)
	if !ok {
		return domain.Approval{}, fmt.Errorf("approvals: kind %q is not registered", kind)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return domain.Approval{}, fmt.Errorf("approvals: payload: %w", err)
	}
	now := s.now()
	a := domain.Approval{ID: uuid.NewString(), Kind: kind, RefID: refID, Summary: summary, Payload: raw, Permission: k.Permission,
		Status: domain.ApprovalPending, RequestedBy: userID(p), CreatedAt: now, ExpiresAt: now.Add(s.TTL)}
	if p != nil {
		a.RequesterName = p.Username
	}
	if err := s.store.CreateApproval(ctx, a); err != nil {
		return domain.Approval{}, err
	}
	audit.Append(ctx, s.store, s.log, p, store.AuditEntry{Action: "approvals.request", Target: audit.Target("approval", a.ID),
		Details: map[string]any{"kind": kind, "ref_id": refID, "expires_at": a.ExpiresAt}})
	return a, nil
}

// List returns the approvals p may see (status "" = all), newest first.
func (s *Service) List(ctx context.Context, p *domain.Principal, status string) ([]domain.Approval, error) {
	switch status {
	case "", domain.ApprovalPending, domain.ApprovalApproved, domain.ApprovalRejected, domain.ApprovalExpired, domain.ApprovalUsed:
	default:
		return nil, domain.Invalid("invalid_status", "status is one of pending, approved, rejected, expired, used")
	}
	all, err := s.store.ListApprovals(ctx, store.ApprovalFilter{Status: status})
	if err != nil {
		return nil, err
	}
	out := []domain.Approval{}
	for _, a := range all {
		if s.visible(ctx, p, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Get returns one approval p may see.
func (s *Service) Get(ctx context.Context, p *domain.Principal, id string) (domain.Approval, error) {
	a, err := s.store.GetApproval(ctx, id)
	if err != nil {
		return a, err
	}
	if !s.visible(ctx, p, a) {
		return domain.Approval{}, domain.NotFound("approval")
	}
	return a, nil
}

// visible: the requester sees their own; others need the kind's
// permission and the kind's visibility.
func (s *Service) visible(ctx context.Context, p *domain.Principal, a domain.Approval) bool {
	if p == nil {
		return false
	}
	if a.RequestedBy == p.UserID {
		return true
	}
	k, ok := s.kind(a.Kind)
	if !ok || !p.Can(a.Permission) {
		return false
	}
	return k.Visible == nil || k.Visible(ctx, p, a)
}

// Decide approves (approve true) or rejects a pending approval as p with a
// comment. The requester cannot decide their own (403 self_approval);
// p needs the approval's permission; a decided or expired approval is a
// conflict (approval_decided).
func (s *Service) Decide(ctx context.Context, p *domain.Principal, id string, approve bool, comment string) (domain.Approval, error) {
	comment = strings.TrimSpace(comment)
	if len(comment) > MaxComment {
		return domain.Approval{}, domain.Invalid("comment_too_long", fmt.Sprintf("a comment has at most %d bytes", MaxComment))
	}
	if strings.ContainsRune(comment, 0) {
		return domain.Approval{}, domain.Invalid("invalid_comment", "a comment holds no NUL byte")
	}
	a, err := s.Get(ctx, p, id)
	if err != nil {
		return a, err
	}
	if a.RequestedBy == p.UserID {
		return domain.Approval{}, &domain.Error{Kind: domain.ErrForbidden, Code: "self_approval",
			Message: "you requested this; a second person must approve or reject it (an API key acts as its owner)"}
	}
	if !p.Can(a.Permission) {
		return domain.Approval{}, &domain.Error{Kind: domain.ErrForbidden, Code: "forbidden",
			Message: "deciding this approval needs the permission " + a.Permission}
	}
	now := s.now()
	if a.Status == domain.ApprovalPending && !now.Before(a.ExpiresAt) {
		s.expire(ctx, a)
		return domain.Approval{}, domain.Conflict("approval_decided", "the approval expired")
	}
	status := domain.ApprovalRejected
	if approve {
		status = domain.ApprovalApproved
	}
	ok, err := s.store.DecideApproval(ctx, id, status, p.UserID, comment, now)
	if err != nil {
		return domain.Approval{}, err
	}
	if !ok {
		return domain.Approval{}, domain.Conflict("approval_decided", "the approval was already decided ("+a.Status+")")
	}
	a.Status, a.DecidedBy, a.DeciderName, a.Comment, a.DecidedAt = status, p.UserID, p.Username, comment, &now
	s.decided(ctx, a)
	return a, nil
}

func (s *Service) decided(ctx context.Context, a domain.Approval) {
	k, ok := s.kind(a.Kind)
	if !ok || k.Decided == nil {
		return
	}
	if err := k.Decided(context.WithoutCancel(ctx), a); err != nil {
		s.log.Error("approval: decision not applied", "approval_id", a.ID, "kind", a.Kind, "err", err)
	}
}

func (s *Service) expire(ctx context.Context, a domain.Approval) {
	now := s.now()
	ok, err := s.store.DecideApproval(ctx, a.ID, domain.ApprovalExpired, "", "", now)
	if err != nil || !ok {
		return
	}
	a.Status, a.DecidedAt = domain.ApprovalExpired, &now
	audit.Append(ctx, s.store, s.log, nil, store.AuditEntry{Action: "approvals.expire", Target: audit.Target("approval", a.ID),
		Details: map[string]any{"kind": a.Kind, "ref_id": a.RefID}})
	s.decided(ctx, a)
}

// ExpireDue expires every pending approval past its expiry (any replica
// may run it: each expiry is a compare-and-set).
func (s *Service) ExpireDue(ctx context.Context) {
	list, err := s.store.ExpiredApprovals(ctx, s.now())
	if err != nil {
		s.log.Warn("approvals: expiry", "err", err)
		return
	}
	sort.Slice(list, func(i, j int) bool { return list[i].CreatedAt.Before(list[j].CreatedAt) })
	for _, a := range list {
		s.expire(ctx, a)
	}
}

// Run expires due approvals every interval until ctx ends.
func (s *Service) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.ExpireDue(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func userID(p *domain.Principal) string {
	if p == nil {
		return ""
	}
	return p.UserID
}

// bindingPayload is the payload of a single-run approval: the binding
// Check matches runs against, and what approvers are shown.
type bindingPayload struct {
	Subject string         `json:"subject"`
	Targets []string       `json:"targets"`
	Action  string         `json:"action"`
	Detail  map[string]any `json:"detail,omitempty"`
}

// BoundTargets returns the server ids a single-run approval is bound to
// (nil for another kind of approval), for the kinds' visibility checks.
func BoundTargets(a domain.Approval) []string {
	var b bindingPayload
	if json.Unmarshal(a.Payload, &b) != nil {
		return nil
	}
	return b.Targets
}

func (b bindingPayload) matches(o bindingPayload) bool {
	return b.Action == o.Action && slices.Equal(b.Targets, o.Targets)
}

// Check is the single-use gate of runs that need approval (a schedule's
// run, a custom action's run; automation.Approvals). An approval is bound
// to its requester and to bind (the exact target set and action):
//
//   - an approved approval of kind on subjectID requested by the same
//     requester for the same binding is consumed and the run may go (nil);
//   - a pending one with the same requester and binding makes the run wait
//     (conflict approval_pending naming it);
//   - otherwise an approval is requested on behalf of requester (nil: the
//     system) and the run waits for it; the requester's pending approvals
//     of this subject for another binding are withdrawn (superseded).
//
// Approving lets exactly one run through; the next run asks again. A run
// of another user, on other servers or with a changed action never uses
// someone else's approval. kind must be registered.
func (s *Service) Check(ctx context.Context, kind, subjectID string, requester *domain.Principal, summary string, bind domain.ApprovalBinding) error {
	want := bindingPayload{Subject: summary, Targets: slices.Clone(bind.Targets), Action: bind.Action, Detail: bind.Detail}
	if want.Targets == nil {
		want.Targets = []string{}
	}
	slices.Sort(want.Targets)
	want.Targets = slices.Compact(want.Targets)
	open, err := s.store.OpenApprovals(ctx, kind, subjectID)
	if err != nil {
		return err
	}
	now := s.now()
	uid := userID(requester)
	mine := func(a domain.Approval) (bool, bool) {
		if a.RequestedBy != uid {
			return false, false
		}
		var got bindingPayload
		if json.Unmarshal(a.Payload, &got) != nil {
			return true, false
		}
		return true, got.matches(want)
	}
	for _, a := range open {
		if own, same := mine(a); a.Status != domain.ApprovalApproved || !own || !same {
			continue
		}
		ok, err := s.store.UseApproval(ctx, a.ID)
		if err != nil {
			return err
		}
		if ok {
			audit.Append(ctx, s.store, s.log, requester, store.AuditEntry{Action: "approvals.use", Target: audit.Target("approval", a.ID),
				Details: map[string]any{"kind": kind, "ref_id": subjectID, "targets": len(want.Targets)}})
			return nil
		}
	}
	for _, a := range open {
		if a.Status != domain.ApprovalPending || !now.Before(a.ExpiresAt) {
			continue
		}
		own, same := mine(a)
		switch {
		case own && same:
			return domain.Conflict("approval_pending", fmt.Sprintf("waiting for a second person to approve (approval %s, requested %s)",
				a.ID, a.CreatedAt.UTC().Format(time.RFC3339)))
		case own:
			// The requester now asks for other servers or another action:
			// the old request is moot.
			if ok, err := s.store.DecideApproval(ctx, a.ID, domain.ApprovalRejected, "", "superseded: a new request of the same user for another target set or action", now); err == nil && ok {
				audit.Append(ctx, s.store, s.log, requester, store.AuditEntry{Action: "approvals.supersede", Target: audit.Target("approval", a.ID),
					Details: map[string]any{"kind": kind, "ref_id": subjectID}})
			}
		}
	}
	a, err := s.Request(ctx, requester, kind, subjectID, summary, want)
	if err != nil {
		return err
	}
	return domain.Conflict("approval_pending", fmt.Sprintf("approval %s requested: a second person holding %s must approve before this runs", a.ID, a.Permission))
}
