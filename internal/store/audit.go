package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// auditRow is one entry of the append-only audit log. Hash chains every
// entry to its predecessor: Hash = SHA-256(PrevHash || canonical(entry)),
// so changing, removing or reordering a row breaks every later hash.
type auditRow struct {
	Seq      int64     `gorm:"primaryKey;autoIncrement:false"`
	At       time.Time `gorm:"not null;index"`
	ActorID  string    `gorm:"size:36"`
	Actor    string    `gorm:"size:64"`
	Action   string    `gorm:"size:64;not null;index"`
	Target   string    `gorm:"size:255"`
	IP       string    `gorm:"size:64"`
	Details  string    `gorm:"type:text"`
	PrevHash string    `gorm:"size:64;not null"`
	Hash     string    `gorm:"size:64;not null"`
}

func (auditRow) TableName() string { return "audit_log" }

// AuditEntry is one security event. Details must never hold a secret.
type AuditEntry struct {
	Seq     int64
	At      time.Time
	ActorID string
	Actor   string
	Action  string
	Target  string
	IP      string
	Details map[string]any
}

// auditGenesis is the PrevHash of the first entry.
const auditGenesis = "0000000000000000000000000000000000000000000000000000000000000000"

func auditHash(prev string, r auditRow) string {
	canon, _ := json.Marshal([]any{r.Seq, r.At.UTC().Format(time.RFC3339Nano), r.ActorID, r.Actor, r.Action, r.Target, r.IP, r.Details})
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil))
}

// AppendAudit appends an entry to the chain. Appends are serialised (SQLite
// takes the write lock at BEGIN; PostgreSQL an advisory lock), so the chain
// never forks, also with several replicas.
func (s *Store) AppendAudit(ctx context.Context, e AuditEntry) error {
	details := ""
	if len(e.Details) > 0 {
		b, err := json.Marshal(e.Details)
		if err != nil {
			return fmt.Errorf("store: audit details: %w", err)
		}
		details = string(b)
	}
	at := e.At
	if at.IsZero() {
		at = time.Now()
	}
	// Microseconds: what both databases keep, so the hash survives a round trip.
	at = at.UTC().Truncate(time.Microsecond)
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		if tx.dialect == Postgres {
			if err := db.Exec("SELECT pg_advisory_xact_lock(?)", advisoryKey("lcm-audit")).Error; err != nil {
				return err
			}
		}
		var last []auditRow
		if err := db.Select("seq", "hash").Order("seq DESC").Limit(1).Find(&last).Error; err != nil {
			return err
		}
		prev, seq := auditGenesis, int64(1)
		if len(last) == 1 {
			prev, seq = last[0].Hash, last[0].Seq+1
		}
		r := auditRow{Seq: seq, At: at, ActorID: e.ActorID, Actor: e.Actor, Action: e.Action, Target: e.Target,
			IP: e.IP, Details: details, PrevHash: prev}
		r.Hash = auditHash(prev, r)
		return db.Create(&r).Error
	})
}

// AuditFilter selects entries of ListAudit.
type AuditFilter struct {
	Action string
	Limit  int
	Offset int
}

// ListAudit returns entries newest first and the total matching count.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, int64, error) {
	q := s.conn(ctx).Model(&auditRow{})
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("store: audit: %w", err)
	}
	var rows []auditRow
	if err := q.Order("seq DESC").Limit(f.Limit).Offset(f.Offset).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("store: audit: %w", err)
	}
	out := make([]AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = AuditEntry{Seq: r.Seq, At: r.At.UTC(), ActorID: r.ActorID, Actor: r.Actor, Action: r.Action,
			Target: r.Target, IP: r.IP}
		if r.Details != "" {
			_ = json.Unmarshal([]byte(r.Details), &out[i].Details)
		}
	}
	return out, total, nil
}

// AuditChainError names the first entry whose hash does not match.
type AuditChainError struct {
	Seq    int64
	Reason string
}

func (e *AuditChainError) Error() string {
	return fmt.Sprintf("audit log chain broken at entry %d: %s", e.Seq, e.Reason)
}

// VerifyAuditChain recomputes the whole chain in order. It returns the
// number of entries checked and an *AuditChainError at the first break.
func (s *Store) VerifyAuditChain(ctx context.Context) (int64, error) {
	const batch = 1000
	prev, want := auditGenesis, int64(1)
	var n int64
	for {
		var rows []auditRow
		if err := s.conn(ctx).Where("seq >= ?", want).Order("seq").Limit(batch).Find(&rows).Error; err != nil {
			return n, fmt.Errorf("store: audit verify: %w", err)
		}
		for _, r := range rows {
			switch {
			case r.Seq != want:
				return n, &AuditChainError{Seq: want, Reason: "entry missing"}
			case r.PrevHash != prev:
				return n, &AuditChainError{Seq: r.Seq, Reason: "link to the previous entry does not match"}
			}
			r.At = r.At.UTC()
			if auditHash(prev, r) != r.Hash {
				return n, &AuditChainError{Seq: r.Seq, Reason: "content does not match its hash"}
			}
			prev, want = r.Hash, want+1
			n++
		}
		if len(rows) < batch {
			return n, nil
		}
	}
}
