package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/store"
)

// lockFileName guards the data dir: one lcm-api (or rotate-db-key) at a time,
// so a rotation never races a running service holding the old key.
const lockFileName = "lcm.lock"

func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s cannot be created: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir %s is not writable: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another lcm-api process (stop it first)", dir)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	return f, nil
}

func hashPassword(pw string) (string, error) {
	h, err := password.NewHasher(password.Params{}, 1)
	if err != nil {
		return "", err
	}
	return h.Hash(context.Background(), pw)
}

func passwordAcceptable(pw string) bool {
	return password.Validate(pw, password.Identity{Username: "admin"}) == nil
}

// runRotate implements `lcm-api rotate-db-key`: a new master key, every
// registered encrypted field re-sealed in one transaction, blind indexes
// recomputed. The service must be stopped (the data-dir lock enforces it).
func runRotate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, rest, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("rotate-db-key takes no arguments")
	}
	cfg, _, err := loadConfig(o)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg)
	dir := cfg.ResolvedDataDir()
	lock, err := lockDataDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	s, err := store.Open(ctx, store.Options{URL: cfg.Database.URL, DataDir: dir, Logger: log})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return err
	}
	kr, _, err := s.ResolveMasterKey(ctx, dir)
	if err != nil {
		return err
	}
	s.SetKeyring(kr)
	st, err := s.RotateMasterKey(ctx, dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rotated the master key %s → %s: %d fields re-encrypted in %s\n", st.OldKeyID, st.NewKeyID, st.Fields, st.Duration.Round(1e6))
	return nil
}
