package backup

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"
)

// FormatVersion is the manifest's format; a reader refuses a newer one.
const FormatVersion = 1

// Names of the entries in a backup.
const (
	EntryManifest = "manifest.json"
	EntrySQLite   = "database/lcm.db"
	EntryPGDump   = "database/lcm.pgdump"
	EntryKey      = "lcm.key"
	EntryConfig   = "config.json"
	EntryTLSCert  = "tls/ui.crt"
	EntryTLSKey   = "tls/ui.key"
)

// Manifest describes a backup: what wrote it, when, from which database
// and schema, and every file with its size and SHA-256.
type Manifest struct {
	Format      int         `json:"format"`
	LCMVersion  string      `json:"lcm_version"`
	CreatedAt   time.Time   `json:"created_at"`
	Dialect     string      `json:"dialect"`
	Migrations  []string    `json:"migrations"`
	MasterKeyID string      `json:"master_key_id"`
	Files       []FileEntry `json:"files"`
}

// FileEntry is one file of a backup.
type FileEntry struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Source is a file to put into a backup under Name.
type Source struct {
	Name string
	Path string
}

// fileSum hashes a file.
func fileSum(p string) (int64, string, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// writeArchive writes m (its Files filled in from srcs) and the files as a
// gzip'd tar to w. Files are streamed from disk.
func writeArchive(w io.Writer, m Manifest, srcs []Source) (Manifest, error) {
	m.Format = FormatVersion
	m.Files = nil
	for _, s := range srcs {
		n, sum, err := fileSum(s.Path)
		if err != nil {
			return m, fmt.Errorf("backup: %s: %w", s.Name, err)
		}
		m.Files = append(m.Files, FileEntry{Name: s.Name, Size: n, SHA256: sum})
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	// Why BestSpeed: job output and SQLite pages shrink several times even
	// at level 1, and the budget is time (60 s), not bytes.
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return m, err
	}
	tw := tar.NewWriter(gz)
	now := m.CreatedAt
	if err := tw.WriteHeader(&tar.Header{Name: EntryManifest, Mode: 0o600, Size: int64(len(mb)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
		return m, err
	}
	if _, err := tw.Write(mb); err != nil {
		return m, err
	}
	for i, s := range srcs {
		if err := copyInto(tw, s.Path, m.Files[i], now); err != nil {
			return m, fmt.Errorf("backup: %s: %w", s.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return m, err
	}
	return m, gz.Close()
}

func copyInto(tw *tar.Writer, p string, fe FileEntry, at time.Time) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Name: fe.Name, Mode: 0o600, Size: fe.Size, ModTime: at, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	// The file must not change between hashing and copying (snapshots and
	// copies in a temp dir); a size change is caught here, a content
	// change by the reader's checksum.
	n, err := io.Copy(tw, io.LimitReader(f, fe.Size))
	if err == nil && n != fe.Size {
		err = fmt.Errorf("file shrank while being backed up")
	}
	return err
}

// extractArchive reads a gzip'd tar from r into dir. check sees the
// manifest before any file is written; every file must be listed in it,
// match its size and checksum, and every listed file must be present.
func extractArchive(r io.Reader, dir string, check func(Manifest) error) (Manifest, error) {
	var m Manifest
	gz, err := gzip.NewReader(r)
	if err != nil {
		return m, wrapRead(err)
	}
	tr := tar.NewReader(gz)
	hd, err := tr.Next()
	if err != nil {
		return m, wrapRead(err)
	}
	if hd.Name != EntryManifest || hd.Size > 1<<20 {
		return m, fmt.Errorf("%w: the manifest is missing", ErrCorrupt)
	}
	if err := json.NewDecoder(io.LimitReader(tr, hd.Size)).Decode(&m); err != nil {
		return m, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	if m.Format > FormatVersion {
		return m, fmt.Errorf("backup format %d was written by a newer LCM (%s); this version reads format %d", m.Format, m.LCMVersion, FormatVersion)
	}
	if check != nil {
		if err := check(m); err != nil {
			return m, err
		}
	}
	want := map[string]FileEntry{}
	for _, f := range m.Files {
		if !validEntryName(f.Name) {
			return m, fmt.Errorf("%w: unsafe entry name %q", ErrCorrupt, f.Name)
		}
		want[f.Name] = f
	}
	seen := map[string]bool{}
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, wrapRead(err)
		}
		fe, ok := want[hd.Name]
		if !ok || seen[hd.Name] || hd.Typeflag != tar.TypeReg || hd.Size != fe.Size {
			return m, fmt.Errorf("%w: unexpected entry %q", ErrCorrupt, hd.Name)
		}
		seen[hd.Name] = true
		if err := extractFile(tr, filepath.Join(dir, filepath.FromSlash(hd.Name)), fe); err != nil {
			return m, err
		}
	}
	for name := range want {
		if !seen[name] {
			return m, fmt.Errorf("%w: %s is missing", ErrCorrupt, name)
		}
	}
	// Drain to the final chunk: a stream cut after the tar end is caught.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return m, wrapRead(err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return m, wrapRead(err)
	}
	return m, nil
}

func extractFile(r io.Reader, dst string, fe FileEntry) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return wrapRead(err)
	}
	if hex.EncodeToString(h.Sum(nil)) != fe.SHA256 {
		return fmt.Errorf("%w: checksum of %s does not match the manifest", ErrCorrupt, fe.Name)
	}
	return nil
}

// validEntryName accepts only the known, relative, clean names.
func validEntryName(n string) bool {
	switch n {
	case EntrySQLite, EntryPGDump, EntryKey, EntryConfig, EntryTLSCert, EntryTLSKey:
		return path.Clean(n) == n
	}
	return false
}

// wrapRead keeps the reader's sentinel errors and reports gzip/tar damage
// as ErrCorrupt.
func wrapRead(err error) error {
	switch {
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrTruncated), errors.Is(err, ErrWrongPassphrase):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ErrTruncated
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}
