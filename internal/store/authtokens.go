package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// authTokenRow is a one-time link token (invitation/activation or password
// reset). Only its SHA-256 is stored.
type authTokenRow struct {
	ID        string    `gorm:"primaryKey;size:36"`
	Kind      string    `gorm:"size:16;not null"`
	UserID    string    `gorm:"size:36;not null;index"`
	Hash      string    `gorm:"size:64;not null;uniqueIndex"`
	User      userRow   `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
	ExpiresAt time.Time `gorm:"not null"`
	UsedAt    *time.Time
	CreatedAt time.Time
}

func (authTokenRow) TableName() string { return "auth_tokens" }

// CreateAuthToken stores a one-time token of kind for a user; earlier
// unused tokens of the same kind for that user are invalidated, so only
// the newest link works.
func (s *Store) CreateAuthToken(ctx context.Context, kind, userID, hash string, expires time.Time) error {
	return s.InTx(ctx, func(tx *Store) error {
		now := time.Now().UTC()
		if err := tx.conn(ctx).Model(&authTokenRow{}).Where("kind = ? AND user_id = ? AND used_at IS NULL", kind, userID).
			Update("used_at", now).Error; err != nil {
			return err
		}
		return tx.conn(ctx).Omit(clause.Associations).Create(&authTokenRow{ID: uuid.NewString(), Kind: kind, UserID: userID,
			Hash: hash, ExpiresAt: expires.UTC(), CreatedAt: now}).Error
	})
}

// CountAuthTokensSince counts the tokens of kind created for a user at or
// after since (used and invalidated ones included): the reset throttle.
func (s *Store) CountAuthTokensSince(ctx context.Context, kind, userID string, since time.Time) (int64, error) {
	var n int64
	err := s.conn(ctx).Model(&authTokenRow{}).Where("kind = ? AND user_id = ? AND created_at >= ?", kind, userID, since.UTC()).Count(&n).Error
	return n, mapErr(err, "auth tokens")
}

// ConsumeAuthToken marks the token used and returns its user id. Unknown,
// used and expired tokens are all the same invalid_token error. The
// conditional update makes consumption single-use across replicas.
func (s *Store) ConsumeAuthToken(ctx context.Context, kind, hash string, now time.Time) (string, error) {
	invalid := &domain.Error{Kind: domain.ErrInvalid, Code: "invalid_token", Message: "the link is invalid, expired or already used"}
	var rows []authTokenRow
	if err := s.conn(ctx).Where("kind = ? AND hash = ?", kind, hash).Limit(1).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("store: auth token: %w", err)
	}
	if len(rows) == 0 || rows[0].UsedAt != nil || !now.Before(rows[0].ExpiresAt) {
		return "", invalid
	}
	res := s.conn(ctx).Model(&authTokenRow{}).Where("id = ? AND used_at IS NULL", rows[0].ID).Update("used_at", now.UTC())
	if res.Error != nil {
		return "", fmt.Errorf("store: auth token: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return "", invalid
	}
	return rows[0].UserID, nil
}

// PeekAuthToken returns the user id of a valid, unused token without
// consuming it (to check the new password before the link is spent).
func (s *Store) PeekAuthToken(ctx context.Context, kind, hash string, now time.Time) (string, error) {
	var rows []authTokenRow
	if err := s.conn(ctx).Where("kind = ? AND hash = ?", kind, hash).Limit(1).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("store: auth token: %w", err)
	}
	if len(rows) == 0 || rows[0].UsedAt != nil || !now.Before(rows[0].ExpiresAt) {
		return "", &domain.Error{Kind: domain.ErrInvalid, Code: "invalid_token", Message: "the link is invalid, expired or already used"}
	}
	return rows[0].UserID, nil
}
