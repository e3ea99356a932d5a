package store

import (
	"context"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// approvalRow is one four-eyes approval request (generic: kind + ref +
// payload).
type approvalRow struct {
	ID          string    `gorm:"primaryKey;size:36"`
	Kind        string    `gorm:"size:32;not null;index"`
	RefID       string    `gorm:"size:36;not null;index"`
	Summary     string    `gorm:"type:text;not null;default:''"`
	Payload     string    `gorm:"type:text;not null;default:'{}'"`
	Permission  string    `gorm:"size:64;not null"`
	Status      string    `gorm:"size:16;not null;index"`
	RequestedBy string    `gorm:"size:36;not null"`
	DecidedBy   string    `gorm:"size:36;not null;default:''"`
	Comment     string    `gorm:"type:text;not null;default:''"`
	CreatedAt   time.Time `gorm:"not null;index"`
	ExpiresAt   time.Time `gorm:"not null"`
	DecidedAt   *time.Time
}

func (approvalRow) TableName() string { return "approvals" }

func approvalFromRow(r approvalRow) domain.Approval {
	return domain.Approval{ID: r.ID, Kind: r.Kind, RefID: r.RefID, Summary: r.Summary, Payload: []byte(r.Payload),
		Permission: r.Permission, Status: r.Status, RequestedBy: r.RequestedBy, DecidedBy: r.DecidedBy,
		Comment: r.Comment, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, DecidedAt: r.DecidedAt}
}

// CreateApproval stores a pending approval.
func (s *Store) CreateApproval(ctx context.Context, a domain.Approval) error {
	payload := string(a.Payload)
	if payload == "" {
		payload = "{}"
	}
	row := approvalRow{ID: a.ID, Kind: a.Kind, RefID: a.RefID, Summary: a.Summary, Payload: payload, Permission: a.Permission,
		Status: a.Status, RequestedBy: a.RequestedBy, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt}
	return mapErr(s.conn(ctx).Create(&row).Error, "approval")
}

// GetApproval returns an approval with user names.
func (s *Store) GetApproval(ctx context.Context, id string) (domain.Approval, error) {
	var row approvalRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Approval{}, mapErr(err, "approval")
	}
	out := []domain.Approval{approvalFromRow(row)}
	if err := s.nameApprovals(ctx, out); err != nil {
		return domain.Approval{}, err
	}
	return out[0], nil
}

// ApprovalFilter selects approvals.
type ApprovalFilter struct {
	Status string
	Kind   string
	Limit  int
}

// ListApprovals lists approvals, newest first, with user names.
func (s *Store) ListApprovals(ctx context.Context, f ApprovalFilter) ([]domain.Approval, error) {
	q := s.conn(ctx).Model(&approvalRow{})
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 200
	}
	var rows []approvalRow
	if err := q.Order("created_at DESC").Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "approvals")
	}
	out := make([]domain.Approval, len(rows))
	for i, r := range rows {
		out[i] = approvalFromRow(r)
	}
	return out, s.nameApprovals(ctx, out)
}

func (s *Store) nameApprovals(ctx context.Context, list []domain.Approval) error {
	var ids []string
	for _, a := range list {
		ids = append(ids, a.RequestedBy, a.DecidedBy)
	}
	names, err := s.UserNames(ctx, ids)
	if err != nil {
		return err
	}
	for i := range list {
		list[i].RequesterName, list[i].DeciderName = names[list[i].RequestedBy], names[list[i].DecidedBy]
	}
	return nil
}

// DecideApproval moves a pending approval to status (approved, rejected
// or expired) and reports whether it was still pending: exactly one
// decision wins.
func (s *Store) DecideApproval(ctx context.Context, id, status, decidedBy, comment string, at time.Time) (bool, error) {
	res := s.conn(ctx).Model(&approvalRow{}).Where("id = ? AND status = ?", id, domain.ApprovalPending).
		Updates(map[string]any{"status": status, "decided_by": decidedBy, "comment": comment, "decided_at": at})
	if res.Error != nil {
		return false, mapErr(res.Error, "approval")
	}
	return res.RowsAffected > 0, nil
}

// OpenApprovals lists the pending and approved approvals of kind on refID,
// oldest first.
func (s *Store) OpenApprovals(ctx context.Context, kind, refID string) ([]domain.Approval, error) {
	var rows []approvalRow
	if err := s.conn(ctx).Where("kind = ? AND ref_id = ? AND status IN ?", kind, refID, []string{domain.ApprovalPending, domain.ApprovalApproved}).
		Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "approvals")
	}
	out := make([]domain.Approval, len(rows))
	for i, r := range rows {
		out[i] = approvalFromRow(r)
	}
	return out, nil
}

// UseApproval marks an approved approval used and reports whether it was
// still approved: exactly one run consumes it.
func (s *Store) UseApproval(ctx context.Context, id string) (bool, error) {
	res := s.conn(ctx).Model(&approvalRow{}).Where("id = ? AND status = ?", id, domain.ApprovalApproved).
		Update("status", domain.ApprovalUsed)
	if res.Error != nil {
		return false, mapErr(res.Error, "approval")
	}
	return res.RowsAffected > 0, nil
}

// ExpiredApprovals lists pending approvals whose expiry passed.
func (s *Store) ExpiredApprovals(ctx context.Context, now time.Time) ([]domain.Approval, error) {
	var rows []approvalRow
	if err := s.conn(ctx).Where("status = ? AND expires_at <= ?", domain.ApprovalPending, now).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "approvals")
	}
	out := make([]domain.Approval, len(rows))
	for i, r := range rows {
		out[i] = approvalFromRow(r)
	}
	return out, nil
}
