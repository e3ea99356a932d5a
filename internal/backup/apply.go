package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/secret"
	"github.com/lcmproject/lcm/internal/store"
)

// placementKeys stay as the restoring instance has them: where it listens,
// where its data and database live and which bus it joins belong to the
// machine, not to the backup. Everything else in config.json (JWT secret,
// policies, SMTP, …) comes from the backup.
var placementKeys = []string{"data_dir", "database", "host", "port", "agent_host", "agent_port", "mcp_host", "mcp_port", "nats", "dns"}

// ApplyStaged applies a staged restore (StagedDirName in dataDir) before
// config and database are opened: config.json (placement keys kept),
// lcm.key, then the database (SQLite file replaced; PostgreSQL schema
// emptied and the dump restored). It returns nil, nil when nothing is
// staged. On failure the staged files stay and the next start retries.
func ApplyStaged(ctx context.Context, dataDir, configPath, databaseURL string, log *slog.Logger) (*Manifest, error) {
	dir := filepath.Join(dataDir, StagedDirName)
	mb, err := os.ReadFile(filepath.Join(dir, EntryManifest))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); serr == nil {
			// Verify moves the directory only when complete, so this
			// is a directory someone else left: refuse to guess.
			return nil, fmt.Errorf("restore: %s has no manifest; remove it to start without restoring", dir)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, fmt.Errorf("restore: staged manifest: %w", err)
	}
	dialect := string(store.SQLite)
	if databaseURL != "" {
		dialect = string(store.Postgres)
	}
	if err := Compatible(m, dialect); err != nil {
		return nil, fmt.Errorf("restore: %w (remove %s to start without restoring)", err, dir)
	}
	log.Warn("applying the staged restore", "backup_created_at", m.CreatedAt, "backup_version", m.LCMVersion, "dialect", m.Dialect)
	if has(m, EntryConfig) && configPath != "" {
		if err := applyConfig(filepath.Join(dir, EntryConfig), configPath); err != nil {
			return nil, fmt.Errorf("restore: config.json: %w", err)
		}
	}
	if err := copyAtomic(filepath.Join(dir, EntryKey), filepath.Join(dataDir, secret.KeyFileName)); err != nil {
		return nil, fmt.Errorf("restore: lcm.key: %w", err)
	}
	_ = os.Remove(filepath.Join(dataDir, secret.NextKeyFileName))
	if databaseURL == "" {
		db := filepath.Join(dataDir, store.SQLiteFileName)
		for _, suffix := range []string{"-wal", "-shm"} {
			if err := os.Remove(db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("restore: %w", err)
			}
		}
		if err := copyAtomic(filepath.Join(dir, filepath.FromSlash(EntrySQLite)), db); err != nil {
			return nil, fmt.Errorf("restore: database: %w", err)
		}
	} else {
		t0 := time.Now()
		if err := pgRestore(ctx, databaseURL, filepath.Join(dir, filepath.FromSlash(EntryPGDump))); err != nil {
			return nil, err
		}
		log.Info("pg_restore done", "took", time.Since(t0).Round(time.Millisecond))
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("restore: applied, but %s could not be removed: %w", dir, err)
	}
	log.Warn("restore applied: everyone is signed out", "backup_created_at", m.CreatedAt)
	return &m, nil
}

func has(m Manifest, name string) bool {
	for _, f := range m.Files {
		if f.Name == name {
			return true
		}
	}
	return false
}

// applyConfig writes the backup's config.json with this instance's
// placement keys.
func applyConfig(staged, target string) error {
	var fromBackup, current map[string]json.RawMessage
	b, err := os.ReadFile(staged)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &fromBackup); err != nil {
		return fmt.Errorf("the backup's config.json is not JSON: %w", err)
	}
	if cb, err := os.ReadFile(target); err == nil {
		if err := json.Unmarshal(cb, &current); err != nil {
			return fmt.Errorf("the current config.json is not JSON: %w", err)
		}
	}
	for _, k := range placementKeys {
		if v, ok := current[k]; ok {
			fromBackup[k] = v
		} else {
			delete(fromBackup, k)
		}
	}
	out, err := json.MarshalIndent(fromBackup, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(target, out)
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".restore-tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// copyAtomic copies src over dst through a temp file and a rename, so dst
// is either the old or the whole new file.
func copyAtomic(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".restore-tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

// pgRestore empties the database's public schema and restores the dump
// into it, in one transaction each, so a failed restore can be retried.
func pgRestore(ctx context.Context, url, dump string) error {
	env := append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	wipe := exec.CommandContext(ctx, "psql", "--no-psqlrc", "--quiet", "-v", "ON_ERROR_STOP=1", "--dbname="+url,
		"-c", "DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public;")
	wipe.Env = env
	if b, err := wipe.CombinedOutput(); err != nil {
		return fmt.Errorf("restore: empty the database: %v: %s", err, redactURL(strings.TrimSpace(string(b)), url))
	}
	rs := exec.CommandContext(ctx, "pg_restore", "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction",
		"--dbname="+url, dump)
	rs.Env = env
	if b, err := rs.CombinedOutput(); err != nil {
		return fmt.Errorf("restore: pg_restore: %v: %s", err, redactURL(strings.TrimSpace(string(b)), url))
	}
	return nil
}
