package store

import (
	"context"
	"time"

	"gorm.io/gorm/clause"
)

// StorageSample is one measurement of one mount.
type StorageSample struct {
	Mount      string
	TakenAt    time.Time
	UsedBytes  int64
	TotalBytes int64
}

// StorageDay is the daily aggregate of one mount.
type StorageDay struct {
	Day        string // YYYY-MM-DD (UTC)
	AvgUsed    int64
	MaxUsed    int64
	TotalBytes int64
	Samples    int
}

// dayFormat is the storage_daily key: UTC calendar days.
const dayFormat = "2006-01-02"

// AddStorageSamples stores samples of one server.
func (s *Store) AddStorageSamples(ctx context.Context, serverID string, samples []StorageSample) error {
	if len(samples) == 0 {
		return nil
	}
	rows := make([]storageSampleRow, len(samples))
	for i, x := range samples {
		rows[i] = storageSampleRow{ServerID: serverID, Mount: x.Mount, TakenAt: x.TakenAt.UTC(), UsedBytes: x.UsedBytes, TotalBytes: x.TotalBytes}
	}
	return mapErr(s.conn(ctx).Omit("Server").CreateInBatches(rows, ingestBatch).Error, "storage samples")
}

// RecordStorageSample stores the samples of one periodic storage sample
// and, when rootUsedPercent is known (>= 0), carries it into the server's
// last facts, so the traffic light's root-filesystem input follows the
// hourly sample, not only the (less frequent) refresh. A server never
// refreshed has no facts yet: only the samples are stored.
func (s *Store) RecordStorageSample(ctx context.Context, serverID string, samples []StorageSample, rootUsedPercent float64) error {
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.AddStorageSamples(ctx, serverID, samples); err != nil {
			return err
		}
		if rootUsedPercent < 0 {
			return nil
		}
		return mapErr(tx.conn(ctx).Model(&serverFactsRow{}).Where("server_id = ?", serverID).
			Update("root_used_percent", rootUsedPercent).Error, "server facts")
	})
}

// LastStorageSample returns when a server was last sampled (zero if never).
func (s *Store) LastStorageSample(ctx context.Context, serverID string) (time.Time, error) {
	var rows []storageSampleRow
	if err := s.conn(ctx).Omit("Server").Select("taken_at").Where("server_id = ?", serverID).
		Order("taken_at DESC").Limit(1).Find(&rows).Error; err != nil {
		return time.Time{}, mapErr(err, "storage samples")
	}
	if len(rows) == 0 {
		return time.Time{}, nil
	}
	return rows[0].TakenAt, nil
}

// MonitoredVolumes lists the mounts other than "/" a server samples.
func (s *Store) MonitoredVolumes(ctx context.Context, serverID string) ([]string, error) {
	var mounts []string
	err := s.conn(ctx).Model(&storageVolumeRow{}).Where("server_id = ?", serverID).Order("mount").Pluck("mount", &mounts).Error
	return mounts, mapErr(err, "storage volumes")
}

// MonitoredVolumesOf lists, per server of ids, the mounts other than "/"
// it samples (servers without any are absent).
func (s *Store) MonitoredVolumesOf(ctx context.Context, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	for lo := 0; lo < len(ids); lo += ingestBatch {
		var rows []storageVolumeRow
		if err := s.conn(ctx).Omit("Server").Where("server_id IN ?", ids[lo:min(lo+ingestBatch, len(ids))]).
			Order("server_id, mount").Find(&rows).Error; err != nil {
			return nil, mapErr(err, "storage volumes")
		}
		for _, r := range rows {
			out[r.ServerID] = append(out[r.ServerID], r.Mount)
		}
	}
	return out, nil
}

// SetMonitoredVolumes replaces the opt-in mounts of a visible server.
func (s *Store) SetMonitoredVolumes(ctx context.Context, sc Scope, serverID string, mounts []string) error {
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.ServerVisible(ctx, sc, serverID); err != nil {
			return err
		}
		db := tx.conn(ctx)
		if err := db.Where("server_id = ?", serverID).Delete(&storageVolumeRow{}).Error; err != nil {
			return mapErr(err, "storage volumes")
		}
		for _, m := range mounts {
			if err := db.Omit("Server").Clauses(clause.OnConflict{DoNothing: true}).
				Create(&storageVolumeRow{ServerID: serverID, Mount: m}).Error; err != nil {
				return mapErr(err, "storage volumes")
			}
		}
		return nil
	})
}

// AggregateStorage folds the raw samples of every day before today (UTC)
// into storage_daily (recomputed, so it is idempotent), deletes raw samples
// older than keepRaw and daily rows older than retention. It returns the
// number of daily rows written.
func (s *Store) AggregateStorage(ctx context.Context, now time.Time, keepRaw, retention time.Duration) (int, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	from := today.Add(-keepRaw)
	type agg struct {
		ServerID, Mount       string
		TakenAt               time.Time
		UsedBytes, TotalBytes int64
	}
	var rows []agg
	if err := s.conn(ctx).Model(&storageSampleRow{}).Select("server_id, mount, taken_at, used_bytes, total_bytes").
		Where("taken_at >= ? AND taken_at < ?", from, today).Order("server_id, mount, taken_at").Scan(&rows).Error; err != nil {
		return 0, mapErr(err, "storage samples")
	}
	type key struct{ server, mount, day string }
	days := map[key]*storageDailyRow{}
	var sums = map[key]int64{}
	for _, r := range rows {
		k := key{r.ServerID, r.Mount, r.TakenAt.UTC().Format(dayFormat)}
		d := days[k]
		if d == nil {
			d = &storageDailyRow{ServerID: k.server, Mount: k.mount, Day: k.day}
			days[k] = d
		}
		d.Samples++
		sums[k] += r.UsedBytes
		d.MaxUsed = max(d.MaxUsed, r.UsedBytes)
		d.TotalBytes = r.TotalBytes // the last sample of the day wins (resized volumes)
	}
	out := make([]storageDailyRow, 0, len(days))
	for k, d := range days {
		d.AvgUsed = sums[k] / int64(d.Samples)
		out = append(out, *d)
	}
	err := s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		if len(out) > 0 {
			if err := db.Omit("Server").Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: "server_id"}, {Name: "mount"}, {Name: "day"}},
				DoUpdates: clause.AssignmentColumns([]string{"avg_used", "max_used", "total_bytes", "samples"}),
			}).CreateInBatches(out, ingestBatch).Error; err != nil {
				return mapErr(err, "storage daily")
			}
		}
		if err := db.Where("taken_at < ?", from).Delete(&storageSampleRow{}).Error; err != nil {
			return mapErr(err, "storage samples")
		}
		if err := db.Where("day < ?", today.Add(-retention).Format(dayFormat)).Delete(&storageDailyRow{}).Error; err != nil {
			return mapErr(err, "storage daily")
		}
		return tx.bumpGeneration(ctx, GenStorageDaily)
	})
	return len(out), err
}

// StorageHistory returns the daily aggregates of a visible server's mount
// since a day, oldest first, with days not aggregated yet (today, or before
// the first aggregation run) computed from the raw samples.
func (s *Store) StorageHistory(ctx context.Context, sc Scope, serverID, mount string, since time.Time) ([]StorageDay, error) {
	if err := s.ServerVisible(ctx, sc, serverID); err != nil {
		return nil, err
	}
	db := s.conn(ctx)
	sinceDay := since.UTC().Format(dayFormat)
	var daily []storageDailyRow
	if err := db.Omit("Server").Where("server_id = ? AND mount = ? AND day >= ?", serverID, mount, sinceDay).
		Order("day").Find(&daily).Error; err != nil {
		return nil, mapErr(err, "storage daily")
	}
	have := map[string]bool{}
	out := make([]StorageDay, 0, len(daily)+1)
	for _, d := range daily {
		have[d.Day] = true
		out = append(out, StorageDay{Day: d.Day, AvgUsed: d.AvgUsed, MaxUsed: d.MaxUsed, TotalBytes: d.TotalBytes, Samples: d.Samples})
	}
	var raw []storageSampleRow
	if err := db.Omit("Server").Where("server_id = ? AND mount = ? AND taken_at >= ?", serverID, mount, since.UTC()).
		Order("taken_at").Find(&raw).Error; err != nil {
		return nil, mapErr(err, "storage samples")
	}
	var cur *StorageDay
	var sum int64
	flush := func() {
		if cur != nil {
			cur.AvgUsed = sum / int64(cur.Samples)
			out = append(out, *cur)
		}
	}
	for _, r := range raw {
		day := r.TakenAt.UTC().Format(dayFormat)
		if have[day] {
			continue
		}
		if cur == nil || cur.Day != day {
			flush()
			cur, sum = &StorageDay{Day: day}, 0
		}
		cur.Samples++
		sum += r.UsedBytes
		cur.MaxUsed = max(cur.MaxUsed, r.UsedBytes)
		cur.TotalBytes = r.TotalBytes
	}
	flush()
	sortDays(out)
	return out, nil
}

func sortDays(d []StorageDay) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j].Day < d[j-1].Day; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}

// ReplaceStorageDaily writes daily aggregates directly (demo seed).
func (s *Store) ReplaceStorageDaily(ctx context.Context, serverID, mount string, days []StorageDay) error {
	return s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		if err := db.Where("server_id = ? AND mount = ?", serverID, mount).Delete(&storageDailyRow{}).Error; err != nil {
			return mapErr(err, "storage daily")
		}
		if err := tx.bumpGeneration(ctx, GenStorageDaily); err != nil {
			return err
		}
		rows := make([]storageDailyRow, len(days))
		for i, d := range days {
			rows[i] = storageDailyRow{ServerID: serverID, Mount: mount, Day: d.Day, AvgUsed: d.AvgUsed, MaxUsed: d.MaxUsed, TotalBytes: d.TotalBytes, Samples: d.Samples}
		}
		if len(rows) == 0 {
			return nil
		}
		return mapErr(db.Omit("Server").CreateInBatches(rows, ingestBatch).Error, "storage daily")
	})
}
