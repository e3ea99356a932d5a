package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// Announcement is a portal message shown as a banner in the user shell.
// A nil StartsAt or EndsAt leaves that side of the window unbounded.
type Announcement struct {
	ID        string
	Title     string
	Body      string
	Severity  string
	Active    bool
	StartsAt  *time.Time
	EndsAt    *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

func announcementFromRow(r announcementRow) Announcement {
	return Announcement{ID: r.ID, Title: r.Title, Body: r.Body, Severity: r.Severity, Active: r.Active,
		StartsAt: utcPtr(r.StartsAt), EndsAt: utcPtr(r.EndsAt), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// CreateAnnouncement inserts a portal message.
func (s *Store) CreateAnnouncement(ctx context.Context, a Announcement) error {
	row := announcementRow{ID: a.ID, Title: a.Title, Body: a.Body, Severity: a.Severity, Active: a.Active,
		StartsAt: utcPtr(a.StartsAt), EndsAt: utcPtr(a.EndsAt), CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
	return mapErr(s.conn(ctx).Create(&row).Error, "announcement")
}

// UpdateAnnouncement replaces every field but the id and creation time.
func (s *Store) UpdateAnnouncement(ctx context.Context, a Announcement) error {
	res := s.conn(ctx).Model(&announcementRow{}).Where("id = ?", a.ID).Updates(map[string]any{
		"title": a.Title, "body": a.Body, "severity": a.Severity, "active": a.Active,
		"starts_at": utcPtr(a.StartsAt), "ends_at": utcPtr(a.EndsAt), "updated_at": a.UpdatedAt.UTC(),
	})
	if res.Error != nil {
		return mapErr(res.Error, "announcement")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("announcement")
	}
	return nil
}

// GetAnnouncement returns one portal message or a not-found error.
func (s *Store) GetAnnouncement(ctx context.Context, id string) (Announcement, error) {
	var r announcementRow
	if err := s.conn(ctx).Where("id = ?", id).First(&r).Error; err != nil {
		return Announcement{}, mapErr(err, "announcement")
	}
	return announcementFromRow(r), nil
}

// ListAnnouncements returns every portal message, newest first.
func (s *Store) ListAnnouncements(ctx context.Context) ([]Announcement, error) {
	return findAnnouncements(s.conn(ctx).Order("created_at DESC, id"))
}

// VisibleAnnouncements returns the active portal messages whose window
// contains now (a NULL bound is open; startsAt is inclusive, endsAt
// exclusive), newest first.
func (s *Store) VisibleAnnouncements(ctx context.Context, now time.Time) ([]Announcement, error) {
	now = now.UTC()
	q := s.conn(ctx).Where("active = ? AND (starts_at IS NULL OR starts_at <= ?) AND (ends_at IS NULL OR ends_at > ?)", true, now, now).
		Order("created_at DESC, id")
	return findAnnouncements(q)
}

func findAnnouncements(q *gorm.DB) ([]Announcement, error) {
	var rows []announcementRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list announcements: %w", err)
	}
	out := make([]Announcement, len(rows))
	for i, r := range rows {
		out[i] = announcementFromRow(r)
	}
	return out, nil
}

// DeleteAnnouncement removes a portal message.
func (s *Store) DeleteAnnouncement(ctx context.Context, id string) error {
	res := s.conn(ctx).Where("id = ?", id).Delete(&announcementRow{})
	if res.Error != nil {
		return mapErr(res.Error, "announcement")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("announcement")
	}
	return nil
}
