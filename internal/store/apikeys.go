package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// apiKeyRow stores an API key: only the SHA-256 of the plaintext, never
// the plaintext itself.
type apiKeyRow struct {
	ID     string `gorm:"primaryKey;size:36"`
	UserID string `gorm:"size:36;not null;index"`
	Name   string `gorm:"size:128;not null"`
	// Prefix is the first characters of the plaintext, shown in lists so a
	// key can be recognised without revealing it.
	Prefix string `gorm:"size:16;not null"`
	// Hash is the hex SHA-256 of the plaintext key.
	Hash string `gorm:"size:64;not null;uniqueIndex"`
	// Scope is read, readwrite or mcp; keys from before scopes existed are
	// set to readwrite by a data migration.
	Scope      string  `gorm:"size:16"`
	User       userRow `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

func (apiKeyRow) TableName() string { return "api_keys" }

// APIKey is a stored API key (without any secret).
type APIKey struct {
	ID         string
	UserID     string
	Name       string
	Prefix     string
	Scope      string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

func (r apiKeyRow) toKey() APIKey {
	return APIKey{ID: r.ID, UserID: r.UserID, Name: r.Name, Prefix: r.Prefix, Scope: r.Scope,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt}
}

// CreateAPIKey stores a new key by its hash.
func (s *Store) CreateAPIKey(ctx context.Context, k APIKey, hash string) (APIKey, error) {
	row := apiKeyRow{ID: uuid.NewString(), UserID: k.UserID, Name: k.Name, Prefix: k.Prefix, Hash: hash,
		Scope: k.Scope, CreatedAt: time.Now().UTC(), ExpiresAt: k.ExpiresAt}
	if err := s.conn(ctx).Omit(clause.Associations).Create(&row).Error; err != nil {
		return APIKey{}, mapErr(err, "api key")
	}
	return row.toKey(), nil
}

// ListAPIKeys returns the keys of a user ("" for every user), newest first.
func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]APIKey, error) {
	var rows []apiKeyRow
	q := s.conn(ctx).Order("created_at DESC")
	if userID != "" {
		q = q.Where("user_id = ?", userID)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list api keys: %w", err)
	}
	out := make([]APIKey, len(rows))
	for i, r := range rows {
		out[i] = r.toKey()
	}
	return out, nil
}

// GetAPIKey loads a key by id.
func (s *Store) GetAPIKey(ctx context.Context, id string) (APIKey, error) {
	var rows []apiKeyRow
	if err := s.conn(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return APIKey{}, fmt.Errorf("store: api key: %w", err)
	}
	if len(rows) == 0 {
		return APIKey{}, domain.NotFound("api key")
	}
	return rows[0].toKey(), nil
}

// APIKeyByHash loads a key by the SHA-256 of its plaintext.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (APIKey, error) {
	var rows []apiKeyRow
	if err := s.conn(ctx).Where("hash = ?", hash).Limit(1).Find(&rows).Error; err != nil {
		return APIKey{}, fmt.Errorf("store: api key: %w", err)
	}
	if len(rows) == 0 {
		return APIKey{}, domain.NotFound("api key")
	}
	return rows[0].toKey(), nil
}

// RevokeAPIKey marks a key revoked (idempotent).
func (s *Store) RevokeAPIKey(ctx context.Context, id string) error {
	return s.conn(ctx).Model(&apiKeyRow{}).Where("id = ? AND revoked_at IS NULL", id).
		Update("revoked_at", time.Now().UTC()).Error
}

// DeleteAPIKey removes a key row.
func (s *Store) DeleteAPIKey(ctx context.Context, id string) error {
	return s.conn(ctx).Where("id = ?", id).Delete(&apiKeyRow{}).Error
}

// TouchAPIKey records a use, at most once per interval per key (the
// request path must not write on every call).
func (s *Store) TouchAPIKey(ctx context.Context, id string, now time.Time, interval time.Duration) error {
	return s.conn(ctx).Model(&apiKeyRow{}).
		Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", id, now.Add(-interval)).
		Update("last_used_at", now).Error
}

func init() {
	dataMigrations = append(dataMigrations, DataMigration{
		Version: "0.1.0",
		Name:    "identity/api_key_scopes_readwrite",
		// Keys created before scopes existed have no scope; the spec makes
		// them readwrite (the default).
		Run: func(ctx context.Context, tx *Store) error {
			return tx.conn(ctx).Model(&apiKeyRow{}).Where("scope IS NULL OR scope = ''").
				Update("scope", domain.ScopeReadWrite).Error
		},
	})
}

// BackfillAPIKeyScopes runs the scope data migration on demand (tests and
// repair); it is what the version-bound migration runs.
func (s *Store) BackfillAPIKeyScopes(ctx context.Context) (int64, error) {
	res := s.conn(ctx).Model(&apiKeyRow{}).Where("scope IS NULL OR scope = ''").Update("scope", domain.ScopeReadWrite)
	return res.RowsAffected, res.Error
}
