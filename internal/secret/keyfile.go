package secret

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFileName is the master key's file in the data dir.
const KeyFileName = "lcm.key"

// NextKeyFileName holds the new key while rotate-db-key runs. Its presence
// after a crash is resolved at the next start by the key id in the DB.
const NextKeyFileName = "lcm.key.next"

const keyFilePrefix = "lcm-master-key-v1:"

// ErrNoKeyFile means lcm.key does not exist.
var ErrNoKeyFile = errors.New("secret: master key file does not exist")

// ReadKeyFile reads a master key file, refusing anything malformed.
func ReadKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoKeyFile, path)
	}
	if err != nil {
		return nil, fmt.Errorf("secret: read %s: %w", path, err)
	}
	s := strings.TrimSpace(string(data))
	if !strings.HasPrefix(s, keyFilePrefix) {
		return nil, fmt.Errorf("secret: %s is corrupted (missing %q header)", path, keyFilePrefix)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, keyFilePrefix))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("secret: %s is corrupted (not a %d-byte key)", path, KeySize)
	}
	return key, nil
}

// WriteKeyFile writes a key with mode 0600, durably, refusing to overwrite
// an existing file (a key is never replaced silently).
func WriteKeyFile(path string, key []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("secret: create %s: %w", path, err)
	}
	_, err = f.WriteString(keyFilePrefix + base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("secret: write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a create or rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// PromoteNextKey atomically replaces lcm.key with lcm.key.next.
func PromoteNextKey(dataDir string) error {
	if err := os.Rename(filepath.Join(dataDir, NextKeyFileName), filepath.Join(dataDir, KeyFileName)); err != nil {
		return fmt.Errorf("secret: promote new key: %w", err)
	}
	return syncDir(dataDir)
}
