package auth

import (
	"context"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// audit appends a security event through audit.Append (which adds the API
// key of the caller and counts the entry for the request). Details never
// hold secrets: callers pass names, ids and codes only. A failed append is
// logged at ERROR; the action itself has already happened and is not undone.
func (s *Service) audit(ctx context.Context, actor *domain.Principal, action, target string, details map[string]any) {
	audit.Append(ctx, s.st, s.log, actor, store.AuditEntry{At: s.now(), Action: action, Target: target, IP: clientIPOf(ctx), Details: details})
}

func (s *Service) auditAs(ctx context.Context, userID, username, action, target string, details map[string]any) {
	s.audit(ctx, &domain.Principal{UserID: userID, Username: username}, action, target, details)
}

// AuditPage is one page of the audit log plus the chain's state.
type AuditPage struct {
	Items []store.AuditEntry
	Total int64
}

// ListAudit returns audit entries newest first.
func (s *Service) ListAudit(ctx context.Context, f store.AuditFilter) (AuditPage, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 50
	}
	if f.Offset < 0 {
		f.Offset = 0
	}
	items, total, err := s.st.ListAudit(ctx, f)
	return AuditPage{Items: items, Total: total}, err
}

// VerifyAudit recomputes the hash chain (at start).
func (s *Service) VerifyAudit(ctx context.Context) (int64, error) { return s.st.VerifyAuditChain(ctx) }
