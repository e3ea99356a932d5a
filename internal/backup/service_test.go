package backup

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// fakeSchedule stands in for the schedule registry's backup task.
type fakeSchedule struct {
	spec    string
	enabled bool
}

func (f *fakeSchedule) Get(context.Context) (string, bool, error) { return f.spec, f.enabled, nil }
func (f *fakeSchedule) Set(_ context.Context, _ *domain.Principal, spec string, en bool) error {
	f.spec, f.enabled = spec, en
	return nil
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newService(t *testing.T) (*Service, *clock, *fakeSchedule) {
	t.Helper()
	dir := t.TempDir()
	st := storetest.OpenIn(t, "", dir)
	c := &clock{t: time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)}
	s := New(Options{Store: st, DataDir: dir, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: c.now,
		Passphrase: func() ([]byte, error) { return []byte(testPass), nil }})
	fs := &fakeSchedule{spec: "0 3 * * *", enabled: true}
	s.SetSchedule(fs)
	return s, c, fs
}

// TestRetentionAndCatchUp: the retention keeps the newest backups by count
// and age; the catch-up makes a backup only when the last due run was
// missed, once.
func TestRetentionAndCatchUp(t *testing.T) {
	s, c, fs := newService(t)
	ctx := context.Background()
	if _, err := s.UpdateSettings(ctx, nil, SettingsPatch{RetentionCount: ptr(3), RetentionDays: ptr(10)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := s.Create(ctx, nil, "manual"); err != nil {
			t.Fatal(err)
		}
		c.t = c.t.Add(24 * time.Hour)
	}
	list, _ := s.List(ctx)
	if len(list) != 3 {
		t.Fatalf("%d backups kept, want 3 (retention_count)", len(list))
	}
	// Age: 11 days later, only the newest survives the next run's pruning.
	c.t = c.t.Add(11 * 24 * time.Hour)
	if _, err := s.Create(ctx, nil, "manual"); err != nil {
		t.Fatal(err)
	}
	if list, _ = s.List(ctx); len(list) != 1 {
		t.Fatalf("%d backups after the age limit, want 1", len(list))
	}

	// The last attempt was at 02:00, after yesterday's 03:00 slot: before
	// today's slot nothing happens; after a missed slot the catch-up runs
	// once.
	c.t = c.t.Add(59 * time.Minute)
	if err := s.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.List(ctx); len(l) != 1 {
		t.Fatalf("catch-up before the slot made a backup: %d", len(l))
	}
	c.t = c.t.Add(20 * time.Minute) // 03:19, the 03:00 run was missed
	if err := s.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.List(ctx); len(l) != 2 {
		t.Fatalf("catch-up after a missed slot: %d backups, want 2", len(l))
	}
	c.t = c.t.Add(time.Hour)
	s.CatchUp(ctx)
	if l, _ := s.List(ctx); len(l) != 2 {
		t.Fatalf("catch-up ran twice: %d backups", len(l))
	}
	// Disabled: no catch-up.
	fs.enabled = false
	c.t = c.t.Add(48 * time.Hour)
	s.CatchUp(ctx)
	if l, _ := s.List(ctx); len(l) != 2 {
		t.Fatalf("catch-up while disabled: %d backups", len(l))
	}
	st, _ := s.Status(ctx)
	if st.TimeOfDay != "03:00" || st.Passphrase != "set" || st.Database != "ok" || st.LastSuccess == nil {
		t.Fatalf("status %+v", st)
	}
}

// TestSettingsValidation: each bad value is refused with its code and
// nothing is stored.
func TestSettingsValidation(t *testing.T) {
	s, _, fs := newService(t)
	ctx := context.Background()
	for _, c := range []struct {
		p    SettingsPatch
		code string
	}{
		{SettingsPatch{TargetDir: ptr("relative/dir")}, "invalid_target_dir"},
		{SettingsPatch{TargetDir: ptr("/proc/lcm-backups")}, "invalid_target_dir"},
		{SettingsPatch{RetentionCount: ptr(-1)}, "invalid_retention_count"},
		{SettingsPatch{RetentionDays: ptr(4000)}, "invalid_retention_days"},
		{SettingsPatch{TimeOfDay: ptr("25:00")}, "invalid_time_of_day"},
		{SettingsPatch{TimeOfDay: ptr("3pm")}, "invalid_time_of_day"},
	} {
		_, err := s.UpdateSettings(ctx, nil, c.p)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != c.code {
			t.Errorf("%+v: %v, want %s", c.p, err, c.code)
		}
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	st, err := s.UpdateSettings(ctx, nil, SettingsPatch{TargetDir: &target, TimeOfDay: ptr("04:05"), Enabled: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if st.TargetDir != target || fs.spec != "5 4 * * *" || fs.enabled || st.TimeOfDay != "04:05" {
		t.Fatalf("status %+v, schedule %+v", st, fs)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatal(err)
	}
	// Names outside the pattern are not found (no path traversal).
	for _, n := range []string{"../lcm.key", "x.lcmbak/../../y.lcmbak", ".hidden.lcmbak"} {
		if err := s.Delete(ctx, nil, n); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("delete %q: %v", n, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
