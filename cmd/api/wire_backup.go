package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/config"
	"github.com/lcmproject/lcm/internal/health"
)

// applyRestore applies a staged restore under the data-dir lock, before
// the database is opened (docs/backups.md). It reports whether it did.
func applyRestore(ctx context.Context, cfg config.Config, log *slog.Logger) (bool, error) {
	dir := cfg.ResolvedDataDir()
	if _, err := os.Stat(dir); err != nil {
		return false, nil // a first start: nothing can be staged
	}
	lock, err := lockDataDir(dir)
	if err != nil {
		return false, err
	}
	defer lock.Close()
	m, err := backup.ApplyStaged(ctx, dir, cfg.Path, cfg.Database.URL, log)
	if err != nil {
		return false, err
	}
	return m != nil, nil
}

// wireBackup builds the backup service. A staged restore ends the process
// with health.ExitRestore (42): the supervisor starts it again and the
// next start applies the restore.
func (a *app) wireBackup() {
	a.backup = backup.New(backup.Options{Store: a.store, DataDir: a.dataDir, ConfigPath: a.cfg.Path, DatabaseURL: a.cfg.Database.URL,
		Log: a.log, OnStaged: func() {
			select {
			case a.exitCh <- health.ExitRestore:
			default:
			}
		}})
}
