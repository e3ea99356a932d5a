package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// ChunkIn is one output chunk to store.
type ChunkIn struct {
	JobID string
	domain.OutputChunk
}

// AppendOutput stores chunks encrypted, in one transaction. A chunk whose
// (job_id, seq) is already stored is ignored, so redelivery after a crash or
// the same event seen by two API replicas stores it exactly once. The job's
// output_bytes grows to the end of the furthest chunk.
func (s *Store) AppendOutput(ctx context.Context, chunks []ChunkIn) error {
	if len(chunks) == 0 {
		return nil
	}
	rows := make([]jobOutputRow, len(chunks))
	ends := map[string]int64{}
	for i, c := range chunks {
		ct, err := s.Seal(colJobOutput, c.Data)
		if err != nil {
			return err
		}
		rows[i] = jobOutputRow{ID: fmt.Sprintf("%s/%012d", c.JobID, c.Seq), JobID: c.JobID, Seq: c.Seq,
			Off: c.Offset, Size: len(c.Data), Data: ct}
		ends[c.JobID] = max(ends[c.JobID], c.Offset+int64(len(c.Data)))
	}
	return s.InTx(ctx, func(tx *Store) error {
		err := tx.conn(ctx).Omit("Job").Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(rows, tx.bulkInsertRows()).Error
		if err != nil {
			return mapErr(err, "job output")
		}
		return tx.growOutputBytes(ctx, ends)
	})
}

// growOutputBytes raises each job's output_bytes to its end, never
// lowering it (a redelivered chunk), in one statement: a batch of output
// from hundreds of jobs is one UPDATE, not hundreds. The pairs travel as
// one JSON parameter (see bulkInsert for why).
func (s *Store) growOutputBytes(ctx context.Context, ends map[string]int64) error {
	if len(ends) == 0 {
		return nil
	}
	type pair struct {
		ID  string `json:"id"`
		End int64  `json:"end"`
	}
	pairs := make([]pair, 0, len(ends))
	for id, end := range ends {
		pairs = append(pairs, pair{id, end})
	}
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.ID, b.ID) }) // lock order on PostgreSQL
	raw, err := json.Marshal(pairs)
	if err != nil {
		return err
	}
	q := `UPDATE jobs SET output_bytes = v.e FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.end') AS e FROM json_each(?)) AS v
	WHERE jobs.id = v.id AND jobs.output_bytes < v.e`
	if s.dialect == Postgres {
		q = `UPDATE jobs SET output_bytes = v.e FROM (SELECT r.id, r."end" AS e FROM json_to_recordset(?::json) AS r(id text, "end" bigint)) AS v
	WHERE jobs.id = v.id AND jobs.output_bytes < v.e`
	}
	return mapErr(s.conn(ctx).Exec(q, string(raw)).Error, "job")
}

// ReadOutput returns up to limit bytes of a visible job's output from
// offset. It stops at a gap (a chunk not yet ingested), so callers never
// see output out of order.
func (s *Store) ReadOutput(ctx context.Context, sc Scope, jobID string, offset int64, limit int) (domain.JobOutput, error) {
	job, err := s.GetJob(ctx, sc, jobID)
	if err != nil {
		return domain.JobOutput{}, err
	}
	chunks, err := s.OutputFrom(ctx, jobID, offset, limit)
	if err != nil {
		return domain.JobOutput{}, err
	}
	out := domain.JobOutput{JobID: jobID, Status: job.Status, Offset: offset, Output: []byte{}}
	for _, c := range chunks {
		out.Output = append(out.Output, c.Data...)
		out.Offset = c.Offset + int64(len(c.Data))
	}
	out.Complete = job.Status.Terminal() && out.Offset >= job.OutputBytes
	return out, nil
}

// OutputFrom returns the contiguous chunks covering offset onwards (the
// first one trimmed to start exactly at offset), up to about limit bytes.
func (s *Store) OutputFrom(ctx context.Context, jobID string, offset int64, limit int) ([]domain.OutputChunk, error) {
	var out []domain.OutputChunk
	next, total := offset, 0
	for total < limit {
		var rows []jobOutputRow
		err := s.conn(ctx).Where("job_id = ? AND off + size > ?", jobID, next).Order("seq").Limit(64).
			Find(&rows).Error
		if err != nil {
			return nil, mapErr(err, "job output")
		}
		if len(rows) == 0 {
			return out, nil
		}
		for _, r := range rows {
			if r.Off > next { // gap: not ingested yet
				return out, nil
			}
			pt, err := s.Open(colJobOutput, r.Data)
			if err != nil {
				return nil, err
			}
			skip := next - r.Off
			out = append(out, domain.OutputChunk{Seq: r.Seq, Offset: next, Data: pt[skip:]})
			next = r.Off + int64(r.Size)
			total += len(pt) - int(skip)
			if total >= limit {
				return out, nil
			}
		}
	}
	return out, nil
}
