package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/clause"
)

// recoveryCodeRow is one 2FA recovery code of a user. Only a salted,
// slow hash is stored (see internal/auth/recovery.go); UsedAt marks a
// spent code. A new set replaces the old one as a whole.
type recoveryCodeRow struct {
	ID        string  `gorm:"primaryKey;size:36"`
	UserID    string  `gorm:"size:36;not null;index"`
	User      userRow `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
	Salt      string  `gorm:"size:64;not null"`
	Hash      string  `gorm:"size:128;not null"`
	UsedAt    *time.Time
	CreatedAt time.Time `gorm:"not null"`
}

func (recoveryCodeRow) TableName() string { return "recovery_codes" }

// RecoveryCodeHash is one stored code: its salt and hash (both hex).
type RecoveryCodeHash struct {
	ID   string
	Salt string
	Hash string
}

// RecoveryCodeStatus summarises a user's recovery codes.
type RecoveryCodeStatus struct {
	Remaining   int
	Total       int
	GeneratedAt *time.Time
}

// ReplaceRecoveryCodes deletes every recovery code of userID (used or not)
// and stores codes as the new set, in one transaction: the old set stops
// working the moment the new one exists.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, userID string, codes []RecoveryCodeHash, now time.Time) error {
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.existsUser(ctx, userID); err != nil {
			return err
		}
		if err := tx.conn(ctx).Where("user_id = ?", userID).Delete(&recoveryCodeRow{}).Error; err != nil {
			return fmt.Errorf("store: recovery codes: %w", err)
		}
		if len(codes) == 0 {
			return nil
		}
		rows := make([]recoveryCodeRow, len(codes))
		for i, c := range codes {
			rows[i] = recoveryCodeRow{ID: uuid.NewString(), UserID: userID, Salt: c.Salt, Hash: c.Hash, CreatedAt: now.UTC()}
		}
		if err := tx.conn(ctx).Omit(clause.Associations).Create(&rows).Error; err != nil {
			return mapErr(err, "recovery codes")
		}
		return nil
	})
}

// DeleteRecoveryCodes removes every recovery code of userID.
func (s *Store) DeleteRecoveryCodes(ctx context.Context, userID string) error {
	if err := s.conn(ctx).Where("user_id = ?", userID).Delete(&recoveryCodeRow{}).Error; err != nil {
		return fmt.Errorf("store: recovery codes: %w", err)
	}
	return nil
}

// UnusedRecoveryCodes returns the hashes of userID's codes not used yet.
func (s *Store) UnusedRecoveryCodes(ctx context.Context, userID string) ([]RecoveryCodeHash, error) {
	var rows []recoveryCodeRow
	if err := s.conn(ctx).Select("id", "salt", "hash").Where("user_id = ? AND used_at IS NULL", userID).
		Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: recovery codes: %w", err)
	}
	out := make([]RecoveryCodeHash, len(rows))
	for i, r := range rows {
		out[i] = RecoveryCodeHash{ID: r.ID, Salt: r.Salt, Hash: r.Hash}
	}
	return out, nil
}

// UseRecoveryCode marks the code id of userID used. It reports false when
// the code is gone or was used first by another request (the conditional
// update makes a code single-use across replicas).
func (s *Store) UseRecoveryCode(ctx context.Context, userID, id string, now time.Time) (bool, error) {
	res := s.conn(ctx).Model(&recoveryCodeRow{}).Where("id = ? AND user_id = ? AND used_at IS NULL", id, userID).
		Update("used_at", now.UTC())
	if res.Error != nil {
		return false, fmt.Errorf("store: recovery codes: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// RecoveryCodes reports how many of userID's codes are left, how many the
// set had and when it was made (nil without a set).
func (s *Store) RecoveryCodes(ctx context.Context, userID string) (RecoveryCodeStatus, error) {
	var rows []recoveryCodeRow
	if err := s.conn(ctx).Select("used_at", "created_at").Where("user_id = ?", userID).Find(&rows).Error; err != nil {
		return RecoveryCodeStatus{}, fmt.Errorf("store: recovery codes: %w", err)
	}
	var st RecoveryCodeStatus
	for _, r := range rows {
		st.Total++
		if r.UsedAt == nil {
			st.Remaining++
		}
		if st.GeneratedAt == nil || r.CreatedAt.Before(*st.GeneratedAt) {
			t := r.CreatedAt.UTC()
			st.GeneratedAt = &t
		}
	}
	return st, nil
}
