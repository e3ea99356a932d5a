// Package audit is the one way entries reach the tamper-evident audit log
// (store.AppendAudit): it fills in who (user, and the API key when the
// caller used one) and from where (the client address) from the request's
// Scope, and counts what each request recorded, so the HTTP layer can tell
// a write that was audited from one that was not (docs/audit.md).
//
// Two ways in: services with their own security events (sign-ins, users,
// API keys, schedules) call Append directly, also for failures; the HTTP
// layer Notes the event of a write on the request's Scope and commits it
// only when the response is a success, so a refused or failed write never
// leaves a success entry.
package audit

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Target names a resource as "<type>:<id>", e.g. "server:6f1c…".

// appendTimeout bounds writing one audit entry. It is written even after
// the request's deadline, so it has its own: a database that stopped
// answering costs the request this long at most.
const appendTimeout = 10 * time.Second

func Target(kind, id string) string { return kind + ":" + id }

// Event is an entry the HTTP layer noted for the current request.
type Event struct {
	Action  string
	Target  string
	Details map[string]any
}

// Scope is the audit context of one request.
type Scope struct {
	// Actor is the authenticated caller (nil: anonymous).
	Actor *domain.Principal
	// IP is the client address (the one clientip derivation).
	IP string

	mu       sync.Mutex
	recorded int
	pending  []Event
}

type ctxKey struct{}

// WithScope returns ctx carrying the request's scope.
func WithScope(ctx context.Context, s *Scope) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// ScopeOf returns the request's scope, nil outside a request.
func ScopeOf(ctx context.Context) *Scope {
	s, _ := ctx.Value(ctxKey{}).(*Scope)
	return s
}

// Note queues the entry of a write; the HTTP layer commits it when the
// response is a success and drops it otherwise.
func (s *Scope) Note(action, target string, details map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, Event{Action: action, Target: target, Details: details})
}

// Take returns and clears the noted events.
func (s *Scope) Take() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending
	s.pending = nil
	return p
}

// Recorded is the number of entries appended for this request so far.
func (s *Scope) Recorded() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recorded
}

func (s *Scope) count() {
	s.mu.Lock()
	s.recorded++
	s.mu.Unlock()
}

// Append appends e to the chain. actor (or else the request's caller) is
// recorded as the entry's actor; a caller signed in with an API key is
// identified by details.api_key_id as well. An empty e.IP takes the
// request's client address. A failed append is logged at ERROR: the
// action itself has already happened and is not undone.
func Append(ctx context.Context, st *store.Store, log *slog.Logger, actor *domain.Principal, e store.AuditEntry) {
	sc := ScopeOf(ctx)
	if actor == nil && sc != nil {
		actor = sc.Actor
	}
	if actor != nil {
		e.ActorID, e.Actor = actor.UserID, actor.Username
		if actor.APIKeyID != "" {
			d := maps.Clone(e.Details)
			if d == nil {
				d = map[string]any{}
			}
			d["api_key_id"] = actor.APIKeyID
			e.Details = d
		}
	}
	if (e.IP == "" || e.IP == "unknown") && sc != nil && sc.IP != "" {
		e.IP = sc.IP
	}
	// The entry is written even when the request's deadline has passed
	// (the change it records may have been committed), within its own.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	if err := st.AppendAudit(actx, e); err != nil {
		if log == nil {
			log = slog.Default()
		}
		log.Error("audit append failed", "action", e.Action, "target", e.Target, "err", err)
		return
	}
	if sc != nil {
		sc.count()
	}
}
