package backup

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/version"
)

const testPass = "correct-Horse-battery-9"

// sample writes a backup of a few files (one spanning several chunks) and
// returns its bytes and the sources' contents.
func sample(t *testing.T, m Manifest) ([]byte, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	big := make([]byte, 3*ChunkSize+12345)
	rand.Read(big)
	files := map[string][]byte{EntrySQLite: big, EntryKey: []byte("key material\n"), EntryConfig: []byte(`{"port":1}`)}
	var srcs []Source
	for _, n := range []string{EntrySQLite, EntryKey, EntryConfig} {
		p := filepath.Join(dir, strings.ReplaceAll(n, "/", "_"))
		if err := os.WriteFile(p, files[n], 0o600); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, Source{Name: n, Path: p})
	}
	out := filepath.Join(dir, "x"+Ext)
	if err := writeFile(out, []byte(testPass), m, srcs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b, files
}

func current() Manifest {
	return Manifest{LCMVersion: version.Get().Version, CreatedAt: time.Now().UTC(), Dialect: "sqlite", Migrations: store.KnownMigrations()[:3]}
}

func TestRoundTrip(t *testing.T) {
	b, files := sample(t, current())
	h, _, err := ReadHeader(bytes.NewReader(b))
	if err != nil || h.Dialect != "sqlite" || h.LCMVersion == "" {
		t.Fatalf("header %+v %v", h, err)
	}
	dataDir := t.TempDir()
	m, err := Verify(bytes.NewReader(b), []byte(testPass), dataDir, "sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 3 {
		t.Fatalf("manifest files %+v", m.Files)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dataDir, StagedDirName, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v", name, len(got), err)
		}
	}
}

// TestRefusals: every damaged or foreign file is refused with its own
// code and leaves nothing staged.
func TestRefusals(t *testing.T) {
	good, _ := sample(t, current())
	newer := current()
	newer.LCMVersion = "99.0.0"
	newerB, _ := sample(t, newer)
	unknown := current()
	unknown.Migrations = append(unknown.Migrations, "zz/999_from_the_future")
	unknownB, _ := sample(t, unknown)
	flip := func(off int) []byte { c := bytes.Clone(good); c[off] ^= 1; return c }
	hdrEnd := 12 + int(uint32(good[8])<<24|uint32(good[9])<<16|uint32(good[10])<<8|uint32(good[11]))
	cases := []struct {
		name    string
		data    []byte
		pass    string
		dialect string
		code    string
	}{
		{"wrong passphrase", good, "another-Passphrase-7", "sqlite", "backup_wrong_passphrase"},
		{"truncated mid-chunk", good[:len(good)/2], testPass, "sqlite", "backup_truncated"},
		{"final chunk dropped", good[:hdrEnd+3*(4+ChunkSize+16)], testPass, "sqlite", "backup_truncated"},
		{"bit flipped in data", flip(len(good) - 100), testPass, "sqlite", "backup_corrupt"},
		{"bit flipped in first chunk", flip(hdrEnd + 50), testPass, "sqlite", "backup_corrupt"},
		{"trailing garbage", append(bytes.Clone(good), 1, 2, 3), testPass, "sqlite", "backup_corrupt"},
		{"header changed", bytes.Replace(good, []byte(`"dialect":"sqlite"`), []byte(`"dialect":"sqlitf"`), 1), testPass, "sqlite", "backup_corrupt"},
		{"not a backup", []byte("PK\x03\x04 some zip"), testPass, "sqlite", "backup_not_a_backup"},
		{"newer major version", newerB, testPass, "sqlite", "backup_newer_version"},
		{"newer schema", unknownB, testPass, "sqlite", "backup_newer_schema"},
		{"other database family", good, testPass, "postgres", "backup_other_database"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Verify(bytes.NewReader(c.data), []byte(c.pass), dir, c.dialect)
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != c.code {
				t.Fatalf("err = %v, want code %s", err, c.code)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("left behind: %v", ents)
			}
		})
	}
}

func TestCheckPassphrase(t *testing.T) {
	for _, c := range []struct {
		p  string
		ok bool
	}{
		{"short1A!", false},
		{"alllowercaseletters", false},
		{"aaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"Password12345!", false},
		{"correct-Horse-battery-9", true},
		{"four random words here please", true},
		{"Zq8!vT2#mK9p", true},
	} {
		if err := CheckPassphrase(c.p); (err == nil) != c.ok {
			t.Errorf("%q: err=%v, want ok=%v", c.p, err, c.ok)
		}
	}
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	if _, err := PassphraseFromEnv(get); !errors.Is(err, ErrNoPassphrase) {
		t.Fatalf("no passphrase: %v", err)
	}
	f := filepath.Join(t.TempDir(), "pass")
	os.WriteFile(f, []byte(testPass+"\n"), 0o600)
	env[EnvPassphraseFile] = f
	if p, err := PassphraseFromEnv(get); err != nil || string(p) != testPass {
		t.Fatalf("file: %q %v", p, err)
	}
}

func TestPrevSlot(t *testing.T) {
	now := time.Date(2026, 11, 24, 14, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		spec string
		want time.Time
	}{
		{"0 3 * * *", time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)},
		{"30 15 * * *", time.Date(2026, 11, 23, 15, 30, 0, 0, time.UTC)},
		{"0 14 * * *", now},
		{"@hourly", now},
	} {
		got, ok := prevSlot(c.spec, now)
		if !ok || !got.Equal(c.want) {
			t.Errorf("%s: %v %v, want %v", c.spec, got, ok, c.want)
		}
	}
	if _, ok := prevSlot("not a spec", now); ok {
		t.Error("invalid spec gave a slot")
	}
}

// FuzzReadHeader: any input is refused or parsed without panicking, and
// never makes the reader allocate more than maxHeader.
func FuzzReadHeader(f *testing.F) {
	f.Add([]byte(Magic + "\x00\x00\x00\x02{}"))
	f.Add([]byte("LCMBAK\x00\x02\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _, err := NewReader(bytes.NewReader(b), []byte(testPass))
		if err == nil {
			io.Copy(io.Discard, r)
		}
	})
}
