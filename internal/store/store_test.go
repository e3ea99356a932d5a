package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/secret"
	"github.com/lcmproject/lcm/internal/testutil"
)

// openTest opens a migrated store with a resolved master key.
func openTest(t testing.TB, db testutil.DB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(context.Background(), Options{URL: db.URL, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	kr, _, err := s.ResolveMasterKey(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s.SetKeyring(kr)
	return s, dir
}

func TestSQLitePragmas(t *testing.T) {
	s, _ := openTest(t, testutil.DB{Name: "sqlite"})
	sqlDB, _ := s.SQL()
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000"} {
		var got string
		if err := sqlDB.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(got, want) {
			t.Errorf("PRAGMA %s = %q, want %q", pragma, got, want)
		}
	}
}

func TestUnwritableDataDir(t *testing.T) {
	if os.Geteuid() == 0 {
		// root ignores directory permissions; use a path under a file instead.
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o600)
		if _, err := Open(context.Background(), Options{DataDir: filepath.Join(f, "data")}); err == nil || !strings.Contains(err.Error(), "data dir") {
			t.Fatalf("want data dir error, got %v", err)
		}
		return
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o500)
	if _, err := Open(context.Background(), Options{DataDir: dir}); err == nil {
		t.Fatal("want error")
	}
}

func TestMigrationsAndSettings(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			ids, err := s.AppliedMigrations(ctx)
			if err != nil || len(ids) != len(allMigrations()) {
				t.Fatalf("applied %v (%v)", ids, err)
			}
			// Second run is clean and changes nothing.
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			// A failing migration rolls back its own work and stops.
			bad := []Migration{{ID: "test/001_bad", Up: func(tx *gorm.DB) error {
				if err := tx.Exec("CREATE TABLE half_done (id INTEGER)").Error; err != nil {
					return err
				}
				return errors.New("boom")
			}}}
			if err := s.migrate(ctx, bad); err == nil || !strings.Contains(err.Error(), "test/001_bad") {
				t.Fatalf("want error naming migration, got %v", err)
			}
			if s.db.Migrator().HasTable("half_done") {
				t.Fatal("failed migration left a table behind")
			}
			if ok, _ := s.InitSetting(ctx, "k", []string{"admin"}); !ok {
				t.Fatal("InitSetting did not write")
			}
			if ok, _ := s.InitSetting(ctx, "k", []string{"other"}); ok {
				t.Fatal("InitSetting overwrote")
			}
			var v []string
			if found, err := s.GetSetting(ctx, "k", &v); !found || err != nil || v[0] != "admin" {
				t.Fatalf("GetSetting %v %v %v", v, found, err)
			}
			if err := s.PutSetting(ctx, "k", []string{"b"}); err != nil {
				t.Fatal(err)
			}
			s.GetSetting(ctx, "k", &v)
			if v[0] != "b" {
				t.Fatal("PutSetting did not replace")
			}
		})
	}
}

func TestDataMigrations(t *testing.T) {
	ctx := context.Background()
	s, dir := openTest(t, testutil.DB{Name: "sqlite"})
	var log []string
	mk := func(v, name string) DataMigration {
		return DataMigration{Version: v, Name: name, Run: func(ctx context.Context, tx *Store) error {
			log = append(log, name)
			return nil
		}}
	}
	list := []DataMigration{mk("0.3.0", "c"), mk("0.1.0", "a"), mk("0.2.0-beta.1", "b"), mk("9.0.0", "future")}
	ran, err := s.runDataMigrations(ctx, dir, "0.3.0", list)
	if err != nil || fmt.Sprint(ran) != "[a b c]" {
		t.Fatalf("ran %v err %v", ran, err)
	}
	if v, _ := ReadVersionFile(dir); v != "0.3.0" {
		t.Fatalf("version.json = %q", v)
	}
	// Same version: nothing runs. Newer binary: only the new one runs.
	ran, _ = s.runDataMigrations(ctx, dir, "0.3.0", list)
	if len(ran) != 0 {
		t.Fatalf("re-ran %v", ran)
	}
	ran, _ = s.runDataMigrations(ctx, dir, "9.0.0", list)
	if fmt.Sprint(ran) != "[future]" || fmt.Sprint(log) != "[a b c future]" {
		t.Fatalf("ran %v log %v", ran, log)
	}
	// A database restored from an older LCM's backup, on the running
	// version: version.json names the binary's version, the database lacks
	// the record of a step; the step runs (only it).
	if err := s.db.Exec("DELETE FROM update_migrations WHERE name = ?", "b").Error; err != nil {
		t.Fatal(err)
	}
	ran, err = s.runDataMigrations(ctx, dir, "9.0.0", list)
	if err != nil || fmt.Sprint(ran) != "[b]" || fmt.Sprint(log) != "[a b c future b]" {
		t.Fatalf("restored database: ran %v log %v err %v", ran, log, err)
	}
	// A failing migration is not recorded and version.json stays.
	fail := []DataMigration{{Version: "9.1.0", Name: "bad", Run: func(context.Context, *Store) error { return errors.New("no") }}}
	if _, err := s.runDataMigrations(ctx, dir, "9.1.0", fail); err == nil {
		t.Fatal("want error")
	}
	if v, _ := ReadVersionFile(dir); v != "9.0.0" {
		t.Fatalf("version.json advanced to %q after a failure", v)
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"0.1.0", "0.1.0", 0}, {"0.1.0", "0.2.0", -1}, {"1.10.0", "1.9.0", 1},
		{"1.0.0-beta.1", "1.0.0", -1}, {"1.0.0-beta.2", "1.0.0-beta.10", -1}, {"v1.2.3", "1.2.3", 0},
	}
	for _, tt := range tests {
		if got := CompareVersions(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareVersions(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestMasterKeyResolution(t *testing.T) {
	ctx := context.Background()
	s, dir := openTest(t, testutil.DB{Name: "sqlite"})
	kr := s.Keyring()
	if err := s.CreateCertificate(ctx, Certificate{Name: "ui", CertPEM: "cert", KeyPEM: "very secret key"}); err != nil {
		t.Fatal(err)
	}
	// The key is sealed in the DB, not stored in plaintext.
	sqlDB, _ := s.SQL()
	var raw []byte
	sqlDB.QueryRow(`SELECT key_pem FROM certificates WHERE name='ui'`).Scan(&raw)
	if bytes.Contains(raw, []byte("very secret")) {
		t.Fatal("plaintext in DB")
	}
	// Same key again: fine.
	if got, _, err := s.ResolveMasterKey(ctx, dir); err != nil || got.ID() != kr.ID() {
		t.Fatalf("re-resolve: %v", err)
	}
	keyPath := filepath.Join(dir, secret.KeyFileName)
	orig, _ := os.ReadFile(keyPath)
	// Missing key with encrypted data: refuse, and never create a new one.
	os.Remove(keyPath)
	if _, _, err := s.ResolveMasterKey(ctx, dir); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := os.Stat(keyPath); err == nil {
		t.Fatal("a new key was created over encrypted data")
	}
	// Corrupted key: refuse.
	os.WriteFile(keyPath, []byte("garbage"), 0o600)
	if _, _, err := s.ResolveMasterKey(ctx, dir); err == nil || !strings.Contains(err.Error(), "corrupted") {
		t.Fatalf("corrupt key: %v", err)
	}
	// A different valid key: refuse.
	os.Remove(keyPath)
	other, _ := secret.GenerateKey()
	secret.WriteKeyFile(keyPath, other)
	if _, _, err := s.ResolveMasterKey(ctx, dir); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("wrong key: %v", err)
	}
	os.WriteFile(keyPath, orig, 0o600)
}

func TestRotateMasterKey(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, dir := openTest(t, db)
			for i := 0; i < 2500; i++ {
				s.CreateCertificate(ctx, Certificate{Name: fmt.Sprintf("c%04d", i), CertPEM: "c", KeyPEM: fmt.Sprintf("key-%d", i)})
			}
			oldID := s.Keyring().ID()
			st, err := s.RotateMasterKey(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if st.Fields != 2500 || st.NewKeyID == oldID {
				t.Fatalf("stats %+v", st)
			}
			if _, err := os.Stat(filepath.Join(dir, secret.NextKeyFileName)); err == nil {
				t.Fatal(".next left behind")
			}
			// A fresh resolution from disk uses the new key and reads everything.
			kr, _, err := s.ResolveMasterKey(ctx, dir)
			if err != nil || kr.ID() != st.NewKeyID {
				t.Fatalf("resolve after rotation: %v", err)
			}
			c, err := s.GetCertificate(ctx, "c1234")
			if err != nil || c.KeyPEM != "key-1234" {
				t.Fatalf("read after rotation: %+v %v", c, err)
			}
		})
	}
}

// TestBadTextIsInvalidInput: PostgreSQL refuses a NUL byte or invalid
// UTF-8 in a text parameter with a data exception; the store reports it
// as invalid input (a 400), never as an internal error. SQLite compares
// such text and finds nothing.
func TestBadTextIsInvalidInput(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			st, _ := openTest(t, db)
			ctx := context.Background()
			for _, id := range []string{"a\x00b", "\xff\xfe"} {
				_, err := st.GetServer(ctx, SystemScope, id)
				want := domain.ErrNotFound
				if db.Name == "postgres" {
					want = domain.ErrInvalid
				}
				if !errors.Is(err, want) {
					t.Fatalf("GetServer(%q): %v, want %v", id, err, want)
				}
			}
		})
	}
}
