package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// speechSettingsID is the primary key of the single speech settings row.
const speechSettingsID = "speech"

// SpeechSettings are the stored speech settings. APIKey is decrypted on
// read and encrypted on write; Revision is assigned by the store.
type SpeechSettings struct {
	Provider    string
	APIKey      string
	KeyVerified bool
	BaseURL     string
	Model       string
	STTLanguage string
	TTSLanguage string
	Phrases     []string
	Revision    int64
	UpdatedAt   time.Time
}

// GetSpeechSettings returns the stored speech settings; false when they
// have never been saved.
func (s *Store) GetSpeechSettings(ctx context.Context) (SpeechSettings, bool, error) {
	var rows []speechSettingsRow
	if err := s.conn(ctx).Where("id = ?", speechSettingsID).Limit(1).Find(&rows).Error; err != nil {
		return SpeechSettings{}, false, fmt.Errorf("store: read speech settings: %w", err)
	}
	if len(rows) == 0 {
		return SpeechSettings{}, false, nil
	}
	r := rows[0]
	var phrases []string
	if r.Phrases != "" {
		if err := json.Unmarshal([]byte(r.Phrases), &phrases); err != nil {
			return SpeechSettings{}, false, fmt.Errorf("store: speech settings phrases are malformed: %w", err)
		}
	}
	return SpeechSettings{Provider: r.Provider, APIKey: r.APIKey, KeyVerified: r.KeyVerified, BaseURL: r.BaseURL,
		Model: r.Model, STTLanguage: r.STTLanguage, TTSLanguage: r.TTSLanguage, Phrases: phrases,
		Revision: r.Revision, UpdatedAt: r.UpdatedAt.UTC()}, true, nil
}

// SpeechSettingsRevision returns the revision of the stored settings (0
// when never saved): one indexed read that lets a replica see whether its
// cached settings are current.
func (s *Store) SpeechSettingsRevision(ctx context.Context) (int64, error) {
	var revs []int64
	if err := s.conn(ctx).Model(&speechSettingsRow{}).Where("id = ?", speechSettingsID).Limit(1).Pluck("revision", &revs).Error; err != nil {
		return 0, fmt.Errorf("store: read speech settings revision: %w", err)
	}
	if len(revs) == 0 {
		return 0, nil
	}
	return revs[0], nil
}

// PutSpeechSettings stores the settings (insert or replace) with the next
// revision and returns that revision.
func (s *Store) PutSpeechSettings(ctx context.Context, v SpeechSettings) (int64, error) {
	phrases, err := json.Marshal(v.Phrases)
	if err != nil {
		return 0, err
	}
	if v.Phrases == nil {
		phrases = []byte("[]")
	}
	var rev int64
	err = s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		// Make sure the row exists, then update it: the UPDATE locks the row
		// (PostgreSQL) or the database (SQLite) until the commit, so two
		// concurrent saves get distinct revisions.
		if err := db.Clauses(clause.OnConflict{DoNothing: true}).
			Create(&speechSettingsRow{ID: speechSettingsID, Phrases: "[]", UpdatedAt: time.Now().UTC()}).Error; err != nil {
			return err
		}
		row := speechSettingsRow{ID: speechSettingsID, Provider: v.Provider, APIKey: v.APIKey, KeyVerified: v.KeyVerified,
			BaseURL: v.BaseURL, Model: v.Model, STTLanguage: v.STTLanguage, TTSLanguage: v.TTSLanguage,
			Phrases: string(phrases), UpdatedAt: time.Now().UTC()}
		if err := db.Model(&row).Select("*").Omit("id", "revision").Updates(&row).Error; err != nil {
			return err
		}
		if err := db.Model(&speechSettingsRow{}).Where("id = ?", speechSettingsID).
			Update("revision", gorm.Expr("revision + 1")).Error; err != nil {
			return err
		}
		rev, err = tx.SpeechSettingsRevision(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: save speech settings: %w", err)
	}
	return rev, nil
}
