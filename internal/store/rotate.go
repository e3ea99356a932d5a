package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"time"

	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/secret"
)

// rotateBatch bounds memory during rotation: rows are read and rewritten in
// keyset-paginated batches inside the one transaction.
const rotateBatch = 1000

// RotateStats reports what a rotation did.
type RotateStats struct {
	OldKeyID, NewKeyID string
	Fields             int
	Duration           time.Duration
}

// RotateMasterKey creates a new master key and re-encrypts every registered
// column (and recomputes blind indexes) in ONE transaction:
//
//  1. write lcm.key.next (0600, fsync)
//  2. BEGIN; re-seal every registered field; set the DB's key id; COMMIT
//  3. rename lcm.key.next → lcm.key
//
// A crash before COMMIT leaves the old key valid for everything (the stale
// .next is dropped at the next start); a crash after COMMIT leaves the new
// key in .next, which the next start promotes. Either way every field is
// readable with exactly one key.
func (s *Store) RotateMasterKey(ctx context.Context, dataDir string) (RotateStats, error) {
	start := time.Now()
	old := s.kr
	if old == nil {
		return RotateStats{}, errNoKeyring
	}
	newKey, err := secret.GenerateKey()
	if err != nil {
		return RotateStats{}, err
	}
	nkr, err := secret.NewKeyring(newKey)
	if err != nil {
		return RotateStats{}, err
	}
	if err := secret.WriteKeyFile(filepath.Join(dataDir, secret.NextKeyFileName), newKey); err != nil {
		return RotateStats{}, err
	}
	stats := RotateStats{OldKeyID: old.ID(), NewKeyID: nkr.ID()}
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, col := range EncryptedColumns() {
			n, err := reencryptColumn(tx, col, old, nkr)
			if err != nil {
				return fmt.Errorf("re-encrypt %s: %w", col.AAD(), err)
			}
			stats.Fields += n
		}
		res := tx.Model(&metaRow{}).Where("key = ? AND value = ?", metaMasterKeyID, old.ID()).
			Updates(map[string]any{"value": nkr.ID(), "updated_at": time.Now().UTC()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("the database is not bound to key %s", old.ID())
		}
		return nil
	})
	if err != nil {
		return stats, fmt.Errorf("store: rotate master key (nothing changed, old key stays valid): %w", err)
	}
	if err := secret.PromoteNextKey(dataDir); err != nil {
		return stats, fmt.Errorf("store: rotation committed but lcm.key.next could not be renamed; the next start completes it: %w", err)
	}
	s.kr = nkr
	stats.Duration = time.Since(start)
	return stats, nil
}

func reencryptColumn(tx *gorm.DB, col EncryptedColumn, old, nkr *secret.Keyring) (int, error) {
	q := func(id string) string { return `"` + id + `"` }
	firstSQL := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s IS NOT NULL ORDER BY %s LIMIT %d`,
		q(col.PK), q(col.Column), q(col.Table), q(col.Column), q(col.PK), rotateBatch)
	nextSQL := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s IS NOT NULL AND %s > ? ORDER BY %s LIMIT %d`,
		q(col.PK), q(col.Column), q(col.Table), q(col.Column), q(col.PK), q(col.PK), rotateBatch)
	var updateSQL string
	if col.BlindColumn != "" {
		updateSQL = fmt.Sprintf(`UPDATE %s SET %s = ?, %s = ? WHERE %s = ?`, q(col.Table), q(col.Column), q(col.BlindColumn), q(col.PK))
	} else {
		updateSQL = fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s = ?`, q(col.Table), q(col.Column), q(col.PK))
	}
	type rec struct {
		pk any
		ct []byte
	}
	var last any
	total := 0
	for {
		var rows *sql.Rows
		var err error
		if last == nil {
			rows, err = tx.Raw(firstSQL).Rows()
		} else {
			rows, err = tx.Raw(nextSQL, last).Rows()
		}
		if err != nil {
			return total, err
		}
		var batch []rec
		for rows.Next() {
			var r rec
			if err := rows.Scan(&r.pk, &r.ct); err != nil {
				rows.Close()
				return total, err
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return total, err
		}
		for _, r := range batch {
			if len(r.ct) == 0 {
				continue
			}
			pt, err := old.Open(r.ct, col.AAD())
			if err != nil {
				return total, fmt.Errorf("row %v: %w", r.pk, err)
			}
			ct, err := nkr.Seal(pt, col.AAD())
			if err != nil {
				return total, err
			}
			args := []any{ct}
			if col.BlindColumn != "" {
				args = append(args, nkr.BlindIndex(col.AAD(), string(pt)))
			}
			args = append(args, r.pk)
			if err := tx.Exec(updateSQL, args...).Error; err != nil {
				return total, err
			}
			total++
		}
		if len(batch) < rotateBatch {
			return total, nil
		}
		last = batch[len(batch)-1].pk
	}
}
