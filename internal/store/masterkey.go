package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/secret"
)

const metaMasterKeyID = "master_key_id"

// ResolveMasterKey binds lcm.key to the database and returns its keyring.
//
//	DB key id   lcm.key   lcm.key.next   →  result
//	none        missing   -              →  create lcm.key, bind it
//	none        K         -              →  bind K
//	K           K         any            →  use K, drop a stale .next (rotation never committed)
//	N           K         N              →  rotation committed, rename .next → lcm.key, use N
//	M           missing   -              →  refuse: encrypted data exists
//	M           K≠M       -              →  refuse: wrong key
//
// A new key is never created over data sealed with another one.
func (s *Store) ResolveMasterKey(ctx context.Context, dataDir string) (kr *secret.Keyring, created bool, err error) {
	keyPath := filepath.Join(dataDir, secret.KeyFileName)
	nextPath := filepath.Join(dataDir, secret.NextKeyFileName)

	dbID, err := s.meta(ctx, metaMasterKeyID)
	if err != nil {
		return nil, false, err
	}
	key, keyErr := secret.ReadKeyFile(keyPath)
	if keyErr != nil && !errors.Is(keyErr, secret.ErrNoKeyFile) {
		return nil, false, fmt.Errorf("%w; refusing to start (restore lcm.key from a backup)", keyErr)
	}
	var cur *secret.Keyring
	if keyErr == nil {
		if cur, err = secret.NewKeyring(key); err != nil {
			return nil, false, err
		}
	}

	switch {
	case dbID == "" && cur == nil:
		key, err := secret.GenerateKey()
		if err != nil {
			return nil, false, err
		}
		if err := secret.WriteKeyFile(keyPath, key); err != nil {
			return nil, false, err
		}
		if cur, err = secret.NewKeyring(key); err != nil {
			return nil, false, err
		}
		created = true
		fallthrough
	case dbID == "":
		_ = os.Remove(nextPath)
		if err := s.bindKey(ctx, cur.ID()); err != nil {
			return nil, false, err
		}
		return cur, created, nil
	case cur != nil && dbID == cur.ID():
		if err := os.Remove(nextPath); err == nil {
			s.log.Warn("removed the new key of an interrupted rotate-db-key; the database still uses the old key", "key_id", cur.ID())
		}
		return cur, false, nil
	}

	if next, err := secret.ReadKeyFile(nextPath); err == nil {
		nkr, err := secret.NewKeyring(next)
		if err != nil {
			return nil, false, err
		}
		if nkr.ID() == dbID {
			if err := secret.PromoteNextKey(dataDir); err != nil {
				return nil, false, err
			}
			s.log.Warn("completed an interrupted rotate-db-key: the new key is now lcm.key", "key_id", dbID)
			return nkr, false, nil
		}
	}
	if cur == nil {
		return nil, false, fmt.Errorf("store: %s is missing but the database holds data encrypted with master key %s; refusing to start (restore lcm.key from a backup, never create a new one)", keyPath, dbID)
	}
	return nil, false, fmt.Errorf("store: %s (key id %s) does not match the database (key id %s); refusing to start", keyPath, cur.ID(), dbID)
}

func (s *Store) bindKey(ctx context.Context, id string) error {
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		Create(&metaRow{Key: metaMasterKeyID, Value: id, UpdatedAt: time.Now().UTC()}).Error
	if err != nil {
		return fmt.Errorf("store: bind master key: %w", err)
	}
	got, err := s.meta(ctx, metaMasterKeyID)
	if err != nil {
		return err
	}
	if got != id {
		// Another replica bound its key first (PostgreSQL, cold start race).
		return fmt.Errorf("store: the database was just bound to master key %s by another process; copy that lcm.key here", got)
	}
	return nil
}

func (s *Store) meta(ctx context.Context, key string) (string, error) {
	var rows []metaRow
	if err := s.db.WithContext(ctx).Where("key = ?", key).Limit(1).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("store: read meta %s: %w", key, err)
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].Value, nil
}

// MasterKeyID returns the key id the database is bound to.
func (s *Store) MasterKeyID(ctx context.Context) (string, error) { return s.meta(ctx, metaMasterKeyID) }
