package inventory

import (
	"context"
	"math"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// StorageDay is one point of the storage history.
type StorageDay struct {
	Day         string  `json:"day"` // YYYY-MM-DD (UTC)
	UsedBytes   int64   `json:"used_bytes"`
	TotalBytes  int64   `json:"total_bytes"`
	UsedPercent float64 `json:"used_percent"`
}

// Forecast is the linear trend of a mount's daily used bytes.
type Forecast struct {
	// DaysUntilFull is nil when the trend is flat or falling, or there are
	// fewer than three days of data.
	DaysUntilFull    *float64 `json:"days_until_full"`
	SlopeBytesPerDay float64  `json:"slope_bytes_per_day"`
	Points           int      `json:"points"`
}

// StorageHistory is the answer of GET /servers/:id/storage-history.
type StorageHistory struct {
	Mount    string       `json:"mount"`
	Samples  []StorageDay `json:"samples"`
	Forecast Forecast     `json:"forecast"`
}

// maxHistoryDays bounds the days a history request may ask for.
const maxHistoryDays = 366

// StorageHistory returns the daily history of one mount ("/" by default)
// of a server visible to p, over the last days (default 90), with the
// forecast over the last ForecastWindow days.
func (s *Service) StorageHistory(ctx context.Context, p *domain.Principal, serverID, mount string, days int) (StorageHistory, error) {
	if mount == "" {
		mount = "/"
	}
	if days <= 0 {
		days = 90
	}
	if days > maxHistoryDays {
		return StorageHistory{}, domain.Invalid("invalid_days", "days must be at most 366")
	}
	today := s.now().Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, -days+1)
	if oldest := today.Add(-s.retention); since.Before(oldest) {
		since = oldest // raw samples may outlive a short retention
	}
	rows, err := s.store.StorageHistory(ctx, store.ScopeOf(p), serverID, mount, since)
	if err != nil {
		return StorageHistory{}, err
	}
	h := StorageHistory{Mount: mount, Samples: make([]StorageDay, len(rows))}
	for i, r := range rows {
		pct := 0.0
		if r.TotalBytes > 0 {
			pct = math.Round(float64(r.AvgUsed)*10000/float64(r.TotalBytes)) / 100
		}
		h.Samples[i] = StorageDay{Day: r.Day, UsedBytes: r.AvgUsed, TotalBytes: r.TotalBytes, UsedPercent: pct}
	}
	h.Forecast = Forecast(ForecastOf(h.Samples))
	return h, nil
}

// ForecastOf fits used bytes over the day index by least squares on the
// last ForecastWindow points: slope = (nΣxy − ΣxΣy) / (nΣx² − (Σx)²), x in
// days since the first point (gaps count as days). With slope > 0 the days
// until full are (total − used_now) / slope, where used_now and total are
// the last point's; a flat or falling trend never fills up (nil).
func ForecastOf(days []StorageDay) Forecast {
	if len(days) > ForecastWindow {
		days = days[len(days)-ForecastWindow:]
	}
	if len(days) < minForecastDays {
		return Forecast{Points: len(days)}
	}
	t0, err := time.Parse("2006-01-02", days[0].Day)
	if err != nil {
		return Forecast{Points: len(days)}
	}
	var sums TrendSums
	for _, d := range days {
		t, err := time.Parse("2006-01-02", d.Day)
		if err != nil {
			return Forecast{Points: len(days)}
		}
		sums.Add(t.Sub(t0).Hours()/24, float64(d.UsedBytes))
	}
	last := days[len(days)-1]
	return ForecastFromSums(sums, last.UsedBytes, last.TotalBytes)
}

// TrendSums are the sums of a least-squares line fit: the points' count
// and Σx, Σy, Σxy, Σx². The store can compute them in SQL over many
// servers at once (store.RootStorageTrends); ForecastOf computes them here.
type TrendSums struct {
	N                int
	SX, SY, SXY, SXX float64
}

// Add adds the point (x, y).
func (t *TrendSums) Add(x, y float64) {
	t.N++
	t.SX += x
	t.SY += y
	t.SXY += x * y
	t.SXX += x * x
}

// ForecastFromSums is the forecast of a fit's sums and the last point's
// used and total bytes: the one formula behind ForecastOf and the alert
// rule's fleet-wide forecast. The caller limits the points to the last
// ForecastWindow days; x must be small (days since a recent day), which
// keeps the differences of sums exact enough in float64.
func ForecastFromSums(t TrendSums, lastUsed, lastTotal int64) Forecast {
	f := Forecast{Points: t.N}
	if t.N < minForecastDays {
		return f
	}
	n := float64(t.N)
	num, den := n*t.SXY-t.SX*t.SY, n*t.SXX-t.SX*t.SX
	if den == 0 {
		return f
	}
	slope := num / den
	f.SlopeBytesPerDay = math.Round(slope)
	if f.SlopeBytesPerDay > 0 && lastTotal > 0 {
		left := math.Max(0, float64(lastTotal-lastUsed)) / slope
		left = math.Round(left*10) / 10
		f.DaysUntilFull = &left
	}
	return f
}
