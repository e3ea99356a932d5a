package backup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/version"
)

// Stage verifies the named backup and stages it for the next start, then
// calls OnStaged (lcm-api exits with 42).
func (s *Service) Stage(ctx context.Context, actor *domain.Principal, name string) (Manifest, error) {
	p, err := s.path(ctx, name)
	if err != nil {
		return Manifest{}, err
	}
	f, err := os.Open(p)
	if err != nil {
		return Manifest{}, err
	}
	defer f.Close()
	return s.stage(ctx, actor, f, name)
}

// StageUpload verifies an uploaded backup and stages it.
func (s *Service) StageUpload(ctx context.Context, actor *domain.Principal, r io.Reader, name string) (Manifest, error) {
	return s.stage(ctx, actor, r, name)
}

func (s *Service) stage(ctx context.Context, actor *domain.Principal, r io.Reader, name string) (Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pass, err := s.o.Passphrase()
	if err != nil {
		return Manifest{}, domain.Unavailable("backup_passphrase", err.Error())
	}
	if sup := s.DatabaseSupport(); sup != "ok" {
		return Manifest{}, domain.Unavailable("backup_database_unsupported", sup)
	}
	m, err := Verify(bufio.NewReaderSize(r, 256<<10), pass, s.o.DataDir, string(s.o.Store.Dialect()))
	if err != nil {
		audit.Append(ctx, s.o.Store, s.o.Log, actor, store.AuditEntry{At: s.o.Now().UTC(), Action: "backup.restore_refused",
			Target: audit.Target("backup", name), Details: map[string]any{"error": err.Error()}})
		return Manifest{}, err
	}
	audit.Append(ctx, s.o.Store, s.o.Log, actor, store.AuditEntry{At: s.o.Now().UTC(), Action: "backup.restore_staged",
		Target: audit.Target("backup", name), Details: map[string]any{"lcm_version": m.LCMVersion, "created_at": m.CreatedAt}})
	s.o.Log.Warn("restore staged: the process exits with 42 and applies it on the next start", "backup", name, "exit_code", 42)
	if s.o.OnStaged != nil {
		time.AfterFunc(stagedExitDelay, s.o.OnStaged)
	}
	return m, nil
}

// Verify decrypts r into a fresh staging directory in dataDir, checks the
// manifest (format, major version, schema, dialect) and every checksum, and
// only then moves it to StagedDirName. On any error nothing is left behind.
func Verify(r io.Reader, pass []byte, dataDir, dialect string) (Manifest, error) {
	dec, _, err := NewReader(r, pass)
	if err != nil {
		return Manifest{}, restoreErr(err)
	}
	tmp, err := os.MkdirTemp(dataDir, ".restore-")
	if err != nil {
		return Manifest{}, err
	}
	defer os.RemoveAll(tmp)
	m, err := extractArchive(dec, tmp, func(m Manifest) error { return Compatible(m, dialect) })
	if err != nil {
		return m, restoreErr(err)
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	if err := os.WriteFile(filepath.Join(tmp, EntryManifest), mb, 0o600); err != nil {
		return m, err
	}
	staged := filepath.Join(dataDir, StagedDirName)
	if err := os.RemoveAll(staged); err != nil {
		return m, err
	}
	if err := os.Rename(tmp, staged); err != nil {
		return m, err
	}
	return m, nil
}

// Compatible refuses a backup this binary cannot restore here: a newer
// major version, a schema migration it does not know, another database
// family, or no database or key in it.
func Compatible(m Manifest, dialect string) error {
	cur := version.Get().Version
	if major(m.LCMVersion) > major(cur) {
		return domain.Invalid("backup_newer_version", fmt.Sprintf("the backup was made by LCM %s, a newer major version than this LCM %s: upgrade LCM first", m.LCMVersion, cur))
	}
	known := store.KnownMigrations()
	for _, id := range m.Migrations {
		if !slices.Contains(known, id) {
			return domain.Invalid("backup_newer_schema", fmt.Sprintf("the backup's database has schema migration %q that this LCM %s does not know: upgrade LCM first", id, cur))
		}
	}
	if m.Dialect != dialect {
		return domain.Invalid("backup_other_database", fmt.Sprintf("the backup holds a %s database and this instance runs on %s: restore it on an instance with the same database family", m.Dialect, dialect))
	}
	var db, key bool
	for _, f := range m.Files {
		db = db || f.Name == EntrySQLite || f.Name == EntryPGDump
		key = key || f.Name == EntryKey
	}
	if !db || !key {
		return domain.Invalid("backup_incomplete", "the backup holds no database or no lcm.key")
	}
	return nil
}

func major(v string) int {
	v = strings.TrimPrefix(v, "v")
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// restoreErr turns reader errors into the API's clear 4xx errors.
func restoreErr(err error) error {
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		return err
	case errors.Is(err, ErrWrongPassphrase):
		return domain.Invalid("backup_wrong_passphrase", "the backup passphrase (LCM_BACKUP_PASSPHRASE) does not open this backup; nothing was changed")
	case errors.Is(err, ErrTruncated):
		return domain.Invalid("backup_truncated", "the backup file is incomplete (truncated); nothing was changed")
	case errors.Is(err, ErrCorrupt):
		return domain.Invalid("backup_corrupt", "the backup file is damaged or was changed ("+err.Error()+"); nothing was changed")
	case errors.Is(err, ErrNotBackup):
		return domain.Invalid("backup_not_a_backup", err.Error()+"; nothing was changed")
	}
	if strings.Contains(err.Error(), "newer LCM") {
		return domain.Invalid("backup_newer_version", err.Error())
	}
	return err
}
