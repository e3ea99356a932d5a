package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// GetSetting decodes the JSON value of a runtime setting into dst. It
// reports false when the setting has never been saved.
func (s *Store) GetSetting(ctx context.Context, key string, dst any) (bool, error) {
	var rows []settingRow
	if err := s.conn(ctx).Where("key = ?", key).Limit(1).Find(&rows).Error; err != nil {
		return false, fmt.Errorf("store: read setting %s: %w", key, err)
	}
	if len(rows) == 0 {
		return false, nil
	}
	if err := json.Unmarshal([]byte(rows[0].Value), dst); err != nil {
		return false, fmt.Errorf("store: setting %s is malformed: %w", key, err)
	}
	return true, nil
}

// PutSetting stores a runtime setting as JSON (insert or replace).
func (s *Store) PutSetting(ctx context.Context, key string, value any) error {
	b, err := json.Marshal(value)
	if err != nil {
		return err
	}
	err = s.conn(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
	}).Create(&settingRow{Key: key, Value: string(b), UpdatedAt: time.Now().UTC()}).Error
	if err != nil {
		return fmt.Errorf("store: save setting %s: %w", key, err)
	}
	return nil
}

// InitSetting stores a setting only when it does not exist yet (seeding).
// It reports whether it wrote.
func (s *Store) InitSetting(ctx context.Context, key string, value any) (bool, error) {
	b, err := json.Marshal(value)
	if err != nil {
		return false, err
	}
	res := s.conn(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		Create(&settingRow{Key: key, Value: string(b), UpdatedAt: time.Now().UTC()})
	if res.Error != nil {
		return false, fmt.Errorf("store: seed setting %s: %w", key, res.Error)
	}
	return res.RowsAffected == 1, nil
}
