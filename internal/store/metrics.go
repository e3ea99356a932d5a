package store

import "context"

// ActiveJobCount is the number of jobs of one kind in one active state.
type ActiveJobCount struct {
	Status string
	Kind   string
	Count  int64
}

// ActiveJobCounts counts the jobs that are not final (pending, started,
// running) by status and kind, for the metrics (one indexed query).
func (s *Store) ActiveJobCounts(ctx context.Context) ([]ActiveJobCount, error) {
	var out []ActiveJobCount
	err := s.conn(ctx).Model(&jobRow{}).Select("status, kind, count(*) AS count").
		Where("status IN ?", activeStatuses()).Group("status, kind").Scan(&out).Error
	return out, mapErr(err, "jobs")
}
