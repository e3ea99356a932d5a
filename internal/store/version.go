package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm/clause"
)

// VersionFileName records the installed version beside the database.
const VersionFileName = "version.json"

// VersionFile is the content of version.json.
type VersionFile struct {
	Version   string    `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DataMigration is a version-bound update step: it runs once, on the first
// start of a binary that is at least Version, unless update_migrations
// records it already. The database's own record decides, not version.json:
// a database restored from an older LCM's backup lacks the records of the
// steps it never had and gets them, although version.json names the
// running version. It must be repeatable (idempotent): it is recorded by
// Name only after it committed.
type DataMigration struct {
	Version string
	Name    string
	Run     func(ctx context.Context, tx *Store) error
}

// dataMigrations lists the version-bound data migrations of every area.
var dataMigrations []DataMigration

// ReadVersionFile returns the installed version, "" when there is none.
func ReadVersionFile(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, VersionFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var v VersionFile
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("store: %s is malformed: %w", VersionFileName, err)
	}
	return v.Version, nil
}

func writeVersionFile(dataDir, version string) error {
	b, _ := json.MarshalIndent(VersionFile{Version: version, UpdatedAt: time.Now().UTC()}, "", "  ")
	tmp := filepath.Join(dataDir, VersionFileName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dataDir, VersionFileName))
}

// RunDataMigrations runs the version-bound data migrations up to the binary
// version that update_migrations does not record yet, in SemVer order, each
// in its own transaction and recorded there; skipped versions all run. Then
// version.json records the binary version. It returns the names it ran.
func (s *Store) RunDataMigrations(ctx context.Context, dataDir, binaryVersion string) ([]string, error) {
	return s.runDataMigrations(ctx, dataDir, binaryVersion, dataMigrations)
}

func (s *Store) runDataMigrations(ctx context.Context, dataDir, binaryVersion string, list []DataMigration) ([]string, error) {
	installed, err := ReadVersionFile(dataDir)
	if err != nil {
		return nil, err
	}
	if installed != "" && CompareVersions(installed, binaryVersion) > 0 {
		s.log.Warn("the database was last used by a newer LCM version; running anyway", "installed", installed, "binary", binaryVersion)
	}
	var done []string
	if err := s.db.WithContext(ctx).Model(&updateMigrationRow{}).Pluck("name", &done).Error; err != nil {
		return nil, fmt.Errorf("store: read %s: %w", "update_migrations", err)
	}
	recorded := make(map[string]bool, len(done))
	for _, n := range done {
		recorded[n] = true
	}
	pending := append([]DataMigration(nil), list...)
	sort.SliceStable(pending, func(i, j int) bool { return CompareVersions(pending[i].Version, pending[j].Version) < 0 })
	var ran []string
	for _, m := range pending {
		if recorded[m.Name] || CompareVersions(m.Version, binaryVersion) > 0 {
			continue
		}
		err := s.InTx(ctx, func(tx *Store) error {
			var n int64
			if err := tx.db.Model(&updateMigrationRow{}).Where("name = ?", m.Name).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if err := m.Run(ctx, tx); err != nil {
				return err
			}
			ran = append(ran, m.Name)
			return tx.db.Clauses(clause.OnConflict{DoNothing: true}).
				Create(&updateMigrationRow{Name: m.Name, Version: m.Version, AppliedAt: time.Now().UTC()}).Error
		})
		if err != nil {
			return ran, fmt.Errorf("store: update migration %s (%s): %w", m.Name, m.Version, err)
		}
	}
	if installed != binaryVersion {
		if err := writeVersionFile(dataDir, binaryVersion); err != nil {
			return ran, fmt.Errorf("store: write %s: %w", VersionFileName, err)
		}
	}
	switch {
	case installed != "" && installed != binaryVersion:
		s.log.Info("updated installed version", "from", installed, "to", binaryVersion, "data_migrations", len(ran))
	case installed != "" && len(ran) > 0:
		// The same version with steps missing: a database restored from
		// an older LCM's backup.
		s.log.Info("ran the data migrations the database lacked", "version", binaryVersion, "data_migrations", ran)
	}
	return ran, nil
}

// CompareVersions compares X.Y.Z[-pre] versions (SemVer precedence):
// -1, 0 or 1. Unparsable parts compare as strings.
func CompareVersions(a, b string) int {
	ac, ap, _ := strings.Cut(strings.TrimPrefix(a, "v"), "-")
	bc, bp, _ := strings.Cut(strings.TrimPrefix(b, "v"), "-")
	as, bs := strings.Split(ac, "."), strings.Split(bc, ".")
	for i := 0; i < 3; i++ {
		if c := compareNum(part(as, i), part(bs, i)); c != 0 {
			return c
		}
	}
	switch {
	case ap == bp:
		return 0
	case ap == "":
		return 1 // a release beats its pre-release
	case bp == "":
		return -1
	}
	ai, bi := strings.Split(ap, "."), strings.Split(bp, ".")
	for i := 0; i < len(ai) || i < len(bi); i++ {
		if i >= len(ai) {
			return -1
		}
		if i >= len(bi) {
			return 1
		}
		if c := compareNum(ai[i], bi[i]); c != 0 {
			return c
		}
	}
	return 0
}

func part(p []string, i int) string {
	if i < len(p) {
		return p[i]
	}
	return "0"
}

func compareNum(a, b string) int {
	an, aerr := strconv.Atoi(a)
	bn, berr := strconv.Atoi(b)
	if aerr == nil && berr == nil {
		switch {
		case an < bn:
			return -1
		case an > bn:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}
