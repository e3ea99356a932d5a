package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"gorm.io/gorm"
)

// Migration is one versioned schema step. It runs in its own transaction and
// is recorded in schema_migrations, so it runs exactly once per database.
type Migration struct {
	// ID is globally unique and stable: "<area>/<nnn>_<what>".
	ID string
	Up func(tx *gorm.DB) error
}

// schemaMigration records an applied migration.
type schemaMigration struct {
	ID        string    `gorm:"primaryKey;size:191"`
	AppliedAt time.Time `gorm:"not null"`
}

func (schemaMigration) TableName() string { return "schema_migrations" }

// allMigrations lists every schema migration in order. Each area keeps its
// own list in migrations_<area>.go; the order of the areas is fixed here.
func allMigrations() []Migration {
	var all []Migration
	for _, area := range [][]Migration{
		platformMigrations,
		identityMigrations,
		fleetMigrations,
		inventoryMigrations,
		recordsMigrations,
		portalMigrations,
		alertsMigrations,
		linuxusersMigrations,
		securityMigrations,
		registryMigrations,
		earlywarnMigrations,
		rolloutsMigrations,
		firewallMigrations,
		containersMigrations,
		automationMigrations,
	} {
		all = append(all, area...)
	}
	return all
}

// Migrate applies every pending schema migration, each in its own
// transaction. On PostgreSQL an advisory lock serialises replicas that start
// at the same moment.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrate(ctx, allMigrations())
}

func (s *Store) migrate(ctx context.Context, list []Migration) error {
	seen := map[string]bool{}
	for _, m := range list {
		if seen[m.ID] {
			return fmt.Errorf("store: migration id %q is listed twice", m.ID)
		}
		seen[m.ID] = true
	}
	if err := s.db.WithContext(ctx).AutoMigrate(&schemaMigration{}); err != nil {
		return fmt.Errorf("store: create schema_migrations: %w", err)
	}
	for _, m := range list {
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if s.dialect == Postgres {
				if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", advisoryKey("lcm-migrate")).Error; err != nil {
					return err
				}
			}
			var n int64
			if err := tx.Model(&schemaMigration{}).Where("id = ?", m.ID).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if err := m.Up(tx); err != nil {
				return err
			}
			s.log.Info("schema migration applied", "migration", m.ID)
			return tx.Create(&schemaMigration{ID: m.ID, AppliedAt: time.Now().UTC()}).Error
		})
		if err != nil {
			return fmt.Errorf("store: migration %s: %w", m.ID, err)
		}
	}
	return nil
}

// AppliedMigrations lists the recorded migration ids in order of application.
func (s *Store) AppliedMigrations(ctx context.Context) ([]string, error) {
	var rows []schemaMigration
	if err := s.db.WithContext(ctx).Order("applied_at, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

func advisoryKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64() >> 1)
}
