package backup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Ext is the backup file extension.
const Ext = ".lcmbak"

// StagedDirName is the directory in the data dir that holds a verified
// restore until the next start applies it.
const StagedDirName = "restore-staged"

// settingKey and stateKey hold the settings and the last run's result.
const (
	settingKey = "backups"
	stateKey   = "backups_state"
)

// stagedExitDelay lets the restore request's answer reach the client
// before the process begins its shutdown (which still drains requests).
const stagedExitDelay = 500 * time.Millisecond

// Schedule reads and changes the "backup" periodic task (the schedule
// registry owns its spec and enabled flag).
type Schedule interface {
	Get(ctx context.Context) (spec string, enabled bool, err error)
	Set(ctx context.Context, actor *domain.Principal, spec string, enabled bool) error
}

// Options configure a Service.
type Options struct {
	Store       *store.Store
	DataDir     string
	ConfigPath  string
	DatabaseURL string // empty: SQLite in DataDir
	// Passphrase returns the passphrase (PassphraseFromEnv(os.Getenv)).
	Passphrase func() ([]byte, error)
	// OnStaged is called once a restore is staged: lcm-api exits with 42.
	OnStaged func()
	Log      *slog.Logger
	Now      func() time.Time
}

// Service makes, lists, deletes and restores backups.
type Service struct {
	o     Options
	sched Schedule
	mu    sync.Mutex // one backup or staging at a time
}

// New returns a service.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Passphrase == nil {
		o.Passphrase = func() ([]byte, error) { return PassphraseFromEnv(os.Getenv) }
	}
	return &Service{o: o}
}

// SetSchedule connects the schedule registry's "backup" task.
func (s *Service) SetSchedule(sc Schedule) { s.sched = sc }

// Settings are the stored backup settings.
type Settings struct {
	TargetDir      string `json:"target_dir"`
	RetentionCount int    `json:"retention_count"`
	RetentionDays  int    `json:"retention_days"`
}

// Defaults: a week of daily backups, none older than 30 days.
func (s *Service) defaults() Settings {
	return Settings{TargetDir: filepath.Join(s.o.DataDir, "backups"), RetentionCount: 7, RetentionDays: 30}
}

// state is the last run's outcome.
type state struct {
	LastAttempt time.Time `json:"last_attempt"`
	LastSuccess time.Time `json:"last_success"`
	LastError   string    `json:"last_error,omitempty"`
	LastName    string    `json:"last_name,omitempty"`
}

// Info is one backup file.
type Info struct {
	Name       string    `json:"name"`
	Size       int64     `json:"size"`
	CreatedAt  time.Time `json:"created_at"`
	LCMVersion string    `json:"lcm_version"`
	Dialect    string    `json:"dialect"`
}

// Status is the backups page: files, settings, schedule and readiness.
type Status struct {
	Backups        []Info     `json:"backups"`
	TargetDir      string     `json:"target_dir"`
	RetentionCount int        `json:"retention_count"`
	RetentionDays  int        `json:"retention_days"`
	TimeOfDay      string     `json:"time_of_day"`
	Schedule       string     `json:"schedule"`
	Enabled        bool       `json:"enabled"`
	Passphrase     string     `json:"passphrase"` // "set" or why not
	Database       string     `json:"database"`   // "ok" or why not
	LastAttempt    *time.Time `json:"last_attempt,omitempty"`
	LastSuccess    *time.Time `json:"last_success,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	RestoreStaged  bool       `json:"restore_staged"`
}

// SettingsPatch changes some settings; nil fields stay.
type SettingsPatch struct {
	TargetDir      *string `json:"target_dir"`
	RetentionCount *int    `json:"retention_count"`
	RetentionDays  *int    `json:"retention_days"`
	TimeOfDay      *string `json:"time_of_day"`
	Enabled        *bool   `json:"enabled"`
}

func (s *Service) settings(ctx context.Context) (Settings, error) {
	st := s.defaults()
	_, err := s.o.Store.GetSetting(ctx, settingKey, &st)
	if st.TargetDir == "" {
		st.TargetDir = s.defaults().TargetDir
	}
	return st, err
}

func (s *Service) state(ctx context.Context) state {
	var st state
	if _, err := s.o.Store.GetSetting(ctx, stateKey, &st); err != nil {
		s.o.Log.Warn("backup state unreadable", "err", err)
	}
	return st
}

// DatabaseSupport reports whether this instance's database can be backed
// up here: "ok", or why not and what to do instead.
func (s *Service) DatabaseSupport() string {
	if s.o.DatabaseURL == "" {
		return "ok"
	}
	for _, tool := range []string{"pg_dump", "pg_restore", "psql"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "the PostgreSQL client tools (" + tool + ") are not installed: install postgresql-client, or use your database's own backup"
		}
	}
	return "ok"
}

// Status returns the backups and the settings.
func (s *Service) Status(ctx context.Context) (Status, error) {
	set, err := s.settings(ctx)
	if err != nil {
		return Status{}, err
	}
	list, err := s.List(ctx)
	if err != nil {
		return Status{}, err
	}
	out := Status{Backups: list, TargetDir: set.TargetDir, RetentionCount: set.RetentionCount, RetentionDays: set.RetentionDays,
		Passphrase: "set", Database: s.DatabaseSupport()}
	if _, err := s.o.Passphrase(); err != nil {
		out.Passphrase = err.Error()
	}
	if s.sched != nil {
		spec, en, err := s.sched.Get(ctx)
		if err != nil {
			return Status{}, err
		}
		out.Schedule, out.Enabled = spec, en
		out.TimeOfDay = timeOfDay(spec)
	}
	st := s.state(ctx)
	if !st.LastAttempt.IsZero() {
		out.LastAttempt = &st.LastAttempt
	}
	if !st.LastSuccess.IsZero() {
		out.LastSuccess = &st.LastSuccess
	}
	out.LastError = st.LastError
	if _, err := os.Stat(filepath.Join(s.o.DataDir, StagedDirName)); err == nil {
		out.RestoreStaged = true
	}
	return out, nil
}

var (
	specTimeRe = regexp.MustCompile(`^(\d{1,2}) (\d{1,2}) \* \* \*$`)
	todRe      = regexp.MustCompile(`^([01]?\d|2[0-3]):([0-5]\d)$`)
	nameRe     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.lcmbak$`)
)

// timeOfDay turns a daily "M H * * *" spec into "HH:MM" (UTC); other
// specs have no single time of day.
func timeOfDay(spec string) string {
	m := specTimeRe.FindStringSubmatch(spec)
	if m == nil {
		return ""
	}
	var h, mi int
	fmt.Sscan(m[2], &h)
	fmt.Sscan(m[1], &mi)
	return fmt.Sprintf("%02d:%02d", h, mi)
}

// UpdateSettings validates and stores a settings change (audited as
// backup.settings_updated).
func (s *Service) UpdateSettings(ctx context.Context, actor *domain.Principal, p SettingsPatch) (Status, error) {
	set, err := s.settings(ctx)
	if err != nil {
		return Status{}, err
	}
	changed := []string{}
	if p.TargetDir != nil {
		d := strings.TrimSpace(*p.TargetDir)
		if d == "" {
			d = s.defaults().TargetDir
		}
		if !filepath.IsAbs(d) {
			return Status{}, domain.Invalid("invalid_target_dir", "target_dir must be an absolute path")
		}
		if err := checkDir(d); err != nil {
			return Status{}, domain.Invalid("invalid_target_dir", fmt.Sprintf("target_dir %s is not a writable directory: %v", d, err))
		}
		set.TargetDir = filepath.Clean(d)
		changed = append(changed, "target_dir")
	}
	if p.RetentionCount != nil {
		if *p.RetentionCount < 0 || *p.RetentionCount > 1000 {
			return Status{}, domain.Invalid("invalid_retention_count", "retention_count must be 0 (no limit) to 1000")
		}
		set.RetentionCount = *p.RetentionCount
		changed = append(changed, "retention_count")
	}
	if p.RetentionDays != nil {
		if *p.RetentionDays < 0 || *p.RetentionDays > 3650 {
			return Status{}, domain.Invalid("invalid_retention_days", "retention_days must be 0 (no limit) to 3650")
		}
		set.RetentionDays = *p.RetentionDays
		changed = append(changed, "retention_days")
	}
	if p.TimeOfDay != nil || p.Enabled != nil {
		if s.sched == nil {
			return Status{}, domain.Unavailable("schedules_unavailable", "the scheduler is not running in this process")
		}
		spec, en, err := s.sched.Get(ctx)
		if err != nil {
			return Status{}, err
		}
		if p.TimeOfDay != nil {
			m := todRe.FindStringSubmatch(*p.TimeOfDay)
			if m == nil {
				return Status{}, domain.Invalid("invalid_time_of_day", `time_of_day must be "HH:MM" (24-hour clock, UTC)`)
			}
			var h, mi int
			fmt.Sscan(m[1], &h)
			fmt.Sscan(m[2], &mi)
			spec = fmt.Sprintf("%d %d * * *", mi, h)
			changed = append(changed, "time_of_day")
		}
		if p.Enabled != nil {
			en = *p.Enabled
			changed = append(changed, "enabled")
		}
		if err := s.sched.Set(ctx, actor, spec, en); err != nil {
			return Status{}, err
		}
	}
	if err := s.o.Store.PutSetting(ctx, settingKey, set); err != nil {
		return Status{}, err
	}
	audit.Append(ctx, s.o.Store, s.o.Log, actor, store.AuditEntry{At: s.o.Now().UTC(), Action: "backup.settings_updated",
		Target: audit.Target("settings", settingKey), Details: map[string]any{"changed": changed, "target_dir": set.TargetDir,
			"retention_count": set.RetentionCount, "retention_days": set.RetentionDays}})
	return s.Status(ctx)
}

func checkDir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(d, ".lcm-write-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// List returns the backups in the target directory, newest first. A file
// whose header cannot be read is listed with its size and time only.
func (s *Service) List(ctx context.Context) ([]Info, error) {
	set, err := s.settings(ctx)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(set.TargetDir)
	if errors.Is(err, os.ErrNotExist) {
		return []Info{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backup: list %s: %w", set.TargetDir, err)
	}
	out := []Info{}
	for _, e := range ents {
		if e.IsDir() || !nameRe.MatchString(e.Name()) {
			continue
		}
		if fi, err := s.info(filepath.Join(set.TargetDir, e.Name())); err == nil {
			out = append(out, fi)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

func (s *Service) info(p string) (Info, error) {
	f, err := os.Open(p)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Info{}, err
	}
	fi := Info{Name: filepath.Base(p), Size: st.Size(), CreatedAt: st.ModTime().UTC()}
	if h, _, err := ReadHeader(bufio.NewReader(f)); err == nil {
		fi.CreatedAt, fi.LCMVersion, fi.Dialect = h.CreatedAt, h.LCMVersion, h.Dialect
	}
	return fi, nil
}

// path resolves a backup name inside the target directory.
func (s *Service) path(ctx context.Context, name string) (string, error) {
	if !nameRe.MatchString(name) {
		return "", domain.NotFound("backup")
	}
	set, err := s.settings(ctx)
	if err != nil {
		return "", err
	}
	p := filepath.Join(set.TargetDir, name)
	if _, err := os.Stat(p); err != nil {
		return "", domain.NotFound("backup")
	}
	return p, nil
}

// Open opens a backup for download (audited as backup.downloaded).
func (s *Service) Open(ctx context.Context, actor *domain.Principal, name string) (*os.File, Info, error) {
	p, err := s.path(ctx, name)
	if err != nil {
		return nil, Info{}, err
	}
	fi, err := s.info(p)
	if err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, Info{}, err
	}
	audit.Append(ctx, s.o.Store, s.o.Log, actor, store.AuditEntry{At: s.o.Now().UTC(), Action: "backup.downloaded",
		Target: audit.Target("backup", name), Details: map[string]any{"size": fi.Size}})
	return f, fi, nil
}

// Delete removes a backup (audited as backup.deleted).
func (s *Service) Delete(ctx context.Context, actor *domain.Principal, name string) error {
	p, err := s.path(ctx, name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("backup: delete %s: %w", name, err)
	}
	audit.Append(ctx, s.o.Store, s.o.Log, actor, store.AuditEntry{At: s.o.Now().UTC(), Action: "backup.deleted",
		Target: audit.Target("backup", name)})
	return nil
}
