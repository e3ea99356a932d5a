package backup

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/secret"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/version"
)

// Create makes a backup now (reason: manual, scheduled, catch-up),
// applies the retention and records the outcome (audited as
// backup.created or backup.failed).
func (s *Service) Create(ctx context.Context, actor *domain.Principal, reason string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.o.Now().UTC()
	fi, err := s.create(ctx)
	st := s.state(ctx)
	st.LastAttempt = start
	details := map[string]any{"reason": reason}
	if err != nil {
		st.LastError = err.Error()
		details["error"] = err.Error()
		audit.Append(ctx, s.o.Store, s.o.Log, actor, store.AuditEntry{At: s.o.Now().UTC(), Action: "backup.failed",
			Target: audit.Target("backup", "-"), Details: details})
		s.o.Log.Error("backup failed", "reason", reason, "err", err)
	} else {
		st.LastSuccess, st.LastError, st.LastName = start, "", fi.Name
		details["size"], details["seconds"] = fi.Size, s.o.Now().Sub(start).Seconds()
		audit.Append(ctx, s.o.Store, s.o.Log, actor, store.AuditEntry{At: s.o.Now().UTC(), Action: "backup.created",
			Target: audit.Target("backup", fi.Name), Details: details})
		s.o.Log.Info("backup written", "name", fi.Name, "size", fi.Size, "reason", reason)
	}
	if perr := s.o.Store.PutSetting(context.WithoutCancel(ctx), stateKey, st); perr != nil {
		s.o.Log.Warn("backup state not saved", "err", perr)
	}
	if err != nil {
		return Info{}, err
	}
	s.prune(ctx)
	return fi, nil
}

func (s *Service) create(ctx context.Context) (Info, error) {
	pass, err := s.o.Passphrase()
	if err != nil {
		return Info{}, domain.Unavailable("backup_passphrase", err.Error())
	}
	if sup := s.DatabaseSupport(); sup != "ok" {
		return Info{}, domain.Unavailable("backup_database_unsupported", sup)
	}
	set, err := s.settings(ctx)
	if err != nil {
		return Info{}, err
	}
	if err := os.MkdirAll(set.TargetDir, 0o700); err != nil {
		return Info{}, fmt.Errorf("backup: target dir: %w", err)
	}
	tmp, err := os.MkdirTemp(set.TargetDir, ".tmp-")
	if err != nil {
		return Info{}, fmt.Errorf("backup: target dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	now := s.o.Now().UTC()
	m := Manifest{LCMVersion: version.Get().Version, CreatedAt: now, Dialect: string(s.o.Store.Dialect())}
	if m.Migrations, err = s.o.Store.AppliedMigrations(ctx); err != nil {
		return Info{}, err
	}
	if m.MasterKeyID, err = s.o.Store.MasterKeyID(ctx); err != nil {
		return Info{}, err
	}
	var srcs []Source
	if s.o.Store.Dialect() == store.SQLite {
		p := filepath.Join(tmp, "lcm.db")
		if err := s.o.Store.VacuumInto(ctx, p); err != nil {
			return Info{}, err
		}
		srcs = append(srcs, Source{Name: EntrySQLite, Path: p})
	} else {
		p := filepath.Join(tmp, "lcm.pgdump")
		t0 := time.Now()
		if err := pgDump(ctx, s.o.DatabaseURL, p); err != nil {
			return Info{}, err
		}
		s.o.Log.Info("pg_dump done", "took", time.Since(t0).Round(time.Millisecond))
		srcs = append(srcs, Source{Name: EntryPGDump, Path: p})
	}
	srcs = append(srcs, Source{Name: EntryKey, Path: filepath.Join(s.o.DataDir, secret.KeyFileName)})
	if s.o.ConfigPath != "" {
		srcs = append(srcs, Source{Name: EntryConfig, Path: s.o.ConfigPath})
	}
	if c, err := s.o.Store.GetCertificate(ctx, "ui"); err == nil {
		cp, kp := filepath.Join(tmp, "ui.crt"), filepath.Join(tmp, "ui.key")
		if err := os.WriteFile(cp, []byte(c.CertPEM), 0o600); err != nil {
			return Info{}, err
		}
		if err := os.WriteFile(kp, []byte(c.KeyPEM), 0o600); err != nil {
			return Info{}, err
		}
		srcs = append(srcs, Source{Name: EntryTLSCert, Path: cp}, Source{Name: EntryTLSKey, Path: kp})
	}
	name := "lcm-" + now.Format("20060102T150405Z") + Ext
	final := filepath.Join(set.TargetDir, name)
	if _, err := os.Stat(final); err == nil {
		b := make([]byte, 3)
		rand.Read(b)
		name = "lcm-" + now.Format("20060102T150405Z") + "-" + hex.EncodeToString(b) + Ext
		final = filepath.Join(set.TargetDir, name)
	}
	part := filepath.Join(tmp, name+".partial")
	if err := writeFile(part, pass, m, srcs); err != nil {
		return Info{}, err
	}
	if err := os.Rename(part, final); err != nil {
		return Info{}, err
	}
	return s.info(final)
}

// writeFile writes an encrypted backup of m and srcs to a new file at path,
// streamed through a 256 KiB buffer, and syncs it.
func writeFile(path string, pass []byte, m Manifest, srcs []Source) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	ew, err := NewWriter(bw, pass, Header{LCMVersion: m.LCMVersion, CreatedAt: m.CreatedAt, Dialect: m.Dialect})
	if err == nil {
		if _, err = writeArchive(ew, m, srcs); err == nil {
			if err = ew.Close(); err == nil {
				if err = bw.Flush(); err == nil {
					err = f.Sync()
				}
			}
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// pgDump writes a custom-format dump (compressed, restorable with
// pg_restore) of the database.
func pgDump(ctx context.Context, url, out string) error {
	cmd := exec.CommandContext(ctx, "pg_dump", "--format=custom", "--no-owner", "--no-privileges", "--compress=1", "--file="+out, "--dbname="+url)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("backup: pg_dump: %v: %s", err, redactURL(strings.TrimSpace(string(b)), url))
	}
	return nil
}

func redactURL(s, url string) string { return strings.ReplaceAll(s, url, "<database url>") }

// prune deletes backups beyond the retention: more than RetentionCount
// (newest kept) or older than RetentionDays. The newest is always kept.
func (s *Service) prune(ctx context.Context) {
	set, err := s.settings(ctx)
	if err != nil {
		return
	}
	list, err := s.List(ctx)
	if err != nil {
		return
	}
	cutoff := s.o.Now().Add(-time.Duration(set.RetentionDays) * 24 * time.Hour)
	for i, b := range list {
		if i == 0 {
			continue
		}
		tooMany := set.RetentionCount > 0 && i >= set.RetentionCount
		tooOld := set.RetentionDays > 0 && b.CreatedAt.Before(cutoff)
		if !tooMany && !tooOld {
			continue
		}
		if err := os.Remove(filepath.Join(set.TargetDir, b.Name)); err != nil {
			s.o.Log.Warn("backup retention: delete failed", "name", b.Name, "err", err)
			continue
		}
		audit.Append(ctx, s.o.Store, s.o.Log, nil, store.AuditEntry{At: s.o.Now().UTC(), Action: "backup.pruned",
			Target: audit.Target("backup", b.Name), Details: map[string]any{"too_many": tooMany, "too_old": tooOld}})
	}
}
