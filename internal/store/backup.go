package store

import (
	"context"
	"errors"
	"fmt"
)

// KnownMigrations lists the ids of every schema migration this binary
// carries; a backup whose schema holds another id comes from a newer LCM.
func KnownMigrations() []string {
	all := allMigrations()
	ids := make([]string, len(all))
	for i, m := range all {
		ids[i] = m.ID
	}
	return ids
}

// VacuumInto writes a consistent copy of the SQLite database to path (which
// must not exist) with VACUUM INTO: one read transaction, so writers go on
// while the copy is made and the copy is a single point in time.
func (s *Store) VacuumInto(ctx context.Context, path string) error {
	if s.dialect != SQLite {
		return errors.New("store: VACUUM INTO is SQLite only")
	}
	if err := s.db.WithContext(ctx).Exec("VACUUM INTO ?", path).Error; err != nil {
		return fmt.Errorf("store: snapshot the database: %w", err)
	}
	return nil
}
