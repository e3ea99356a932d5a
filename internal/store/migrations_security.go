package store

import (
	"time"

	"gorm.io/gorm"
)

// vulnFindingRow is one advisory affecting one package of one server (or
// of one of its CVE-relevant containers, named by Container), with its
// life cycle: new → acknowledged (by a user) → fixed (the scan
// no longer finds it). A finding that comes back is new again.
type vulnFindingRow struct {
	ID             uint64    `gorm:"primaryKey;autoIncrement"`
	ServerID       string    `gorm:"size:36;not null;uniqueIndex:vuln_findings_key,priority:1"`
	Advisory       string    `gorm:"size:128;not null;uniqueIndex:vuln_findings_key,priority:2"`
	Package        string    `gorm:"size:255;not null;uniqueIndex:vuln_findings_key,priority:3;index"`
	Container      string    `gorm:"size:160;not null;default:'';uniqueIndex:vuln_findings_key,priority:4"` // "docker/web"; "" = the server's own
	CVEs           string    `gorm:"column:cves;size:2048;not null;default:''"`                             // comma-separated
	Source         string    `gorm:"size:255;not null;default:''"`
	Installed      string    `gorm:"size:255;not null;default:''"`
	Fixed          string    `gorm:"size:255;not null;default:''"`
	Severity       string    `gorm:"size:16;not null;index"`
	CVSS           float64   `gorm:"column:cvss;not null;default:0"`
	Summary        string    `gorm:"size:512;not null;default:''"`
	Ecosystem      string    `gorm:"size:128;not null;default:''"`
	State          string    `gorm:"size:16;not null;index"`
	FirstSeenAt    time.Time `gorm:"not null"`
	LastSeenAt     time.Time `gorm:"not null"`
	AcknowledgedAt *time.Time
	AcknowledgedBy string `gorm:"size:255;not null;default:''"`
	FixedAt        *time.Time
	// RowHash is 63 bits of the SHA-256 of the content (CVEs … ecosystem)
	// as last written: a rescan compares it instead of reading the
	// content (0: stored before the column, counts as changed once).
	RowHash int64     `gorm:"not null;default:0"`
	Server  serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (vulnFindingRow) TableName() string { return "vuln_findings" }

// vulnScanRow is the last scan of a server.
type vulnScanRow struct {
	ServerID  string    `gorm:"primaryKey;size:36"`
	ScannedAt time.Time `gorm:"not null"`
	Engine    string    `gorm:"size:32;not null;default:''"`
	Findings  int       `gorm:"not null;default:0"`
	Error     string    `gorm:"size:1024;not null;default:''"`
	// Digest is the SHA-256 of the scan's findings as stored: a rescan
	// with the same digest changes nothing but scanned_at.
	Digest string    `gorm:"size:64;not null;default:''"`
	Server serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (vulnScanRow) TableName() string { return "vuln_scans" }

var securityMigrations = []Migration{
	{ID: "security/001_vuln_findings", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&vulnFindingRow{}, &vulnScanRow{})
	}},
	// A finding of a container's package is its own finding: the column,
	// and the container in the unique key (server, advisory, package,
	// container), so the host's and a container's openssl stay apart.
	{ID: "security/002_vuln_findings_container", Up: func(tx *gorm.DB) error {
		m := tx.Migrator()
		if !m.HasColumn(&vulnFindingRow{}, "Container") { // created by 001 on a fresh database
			if err := m.AddColumn(&vulnFindingRow{}, "Container"); err != nil {
				return err
			}
		}
		if m.HasIndex(&vulnFindingRow{}, "vuln_findings_key") {
			if err := m.DropIndex(&vulnFindingRow{}, "vuln_findings_key"); err != nil {
				return err
			}
		}
		return m.CreateIndex(&vulnFindingRow{}, "vuln_findings_key")
	}},
	// The digest of the last scan's findings (ApplyScan's fast path).
	{ID: "security/003_vuln_scans_digest", Up: func(tx *gorm.DB) error {
		if m := tx.Migrator(); !m.HasColumn(&vulnScanRow{}, "Digest") {
			return m.AddColumn(&vulnScanRow{}, "Digest")
		}
		return nil
	}},
	// The content hash of a finding (ApplyScans compares it instead of
	// reading the content).
	{ID: "security/004_vuln_findings_row_hash", Up: func(tx *gorm.DB) error {
		if m := tx.Migrator(); !m.HasColumn(&vulnFindingRow{}, "RowHash") {
			return m.AddColumn(&vulnFindingRow{}, "RowHash")
		}
		return nil
	}},
}
