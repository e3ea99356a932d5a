package store

import (
	"time"

	"gorm.io/gorm"
)

// earlyWarningRow is one newly published advisory that affects one
// installed package of one server, found by the early-warning poll before
// the daily scan. It is open until a user acknowledges it (which hides it
// from the default list and resolves the "new early-warning finding"
// alert); the daily scan's own finding lives on in vuln_findings.
type earlyWarningRow struct {
	ID               uint64    `gorm:"primaryKey;autoIncrement"`
	ServerID         string    `gorm:"size:36;not null;uniqueIndex:early_warnings_key,priority:1"`
	Advisory         string    `gorm:"size:128;not null;uniqueIndex:early_warnings_key,priority:2;index"`
	Package          string    `gorm:"size:255;not null;uniqueIndex:early_warnings_key,priority:3"`
	CVEs             string    `gorm:"column:cves;size:2048;not null;default:''"` // comma-separated
	Source           string    `gorm:"size:255;not null;default:''"`
	Installed        string    `gorm:"size:255;not null;default:''"`
	Fixed            string    `gorm:"size:255;not null;default:''"`
	Severity         string    `gorm:"size:16;not null;index"`
	CVSS             float64   `gorm:"column:cvss;not null;default:0"`
	Summary          string    `gorm:"size:512;not null;default:''"`
	Ecosystem        string    `gorm:"size:128;not null;default:''"`
	AdvisoryModified time.Time `gorm:"not null"`
	CreatedAt        time.Time `gorm:"not null;index"`
	AcknowledgedAt   *time.Time
	AcknowledgedBy   string    `gorm:"size:255;not null;default:''"`
	Server           serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (earlyWarningRow) TableName() string { return "early_warnings" }

// advisoryCursorRow is how far the poll has read one ecosystem's
// modified_id.csv: every record modified at or before Cursor was seen.
type advisoryCursorRow struct {
	Ecosystem string    `gorm:"primaryKey;size:64"`
	Cursor    time.Time `gorm:"not null"`
	PolledAt  time.Time `gorm:"not null"`
	Records   int       `gorm:"not null;default:0"` // records read on the last poll
	Error     string    `gorm:"size:1024;not null;default:''"`
}

func (advisoryCursorRow) TableName() string { return "advisory_cursors" }

// advisoryRunRow is the last run of a kind ("poll", "mirror"): shared by
// every replica, shown by GET /security/advisories/status.
type advisoryRunRow struct {
	Kind       string    `gorm:"primaryKey;size:16"`
	StartedAt  time.Time `gorm:"not null"`
	FinishedAt time.Time `gorm:"not null"`
	Error      string    `gorm:"size:2048;not null;default:''"`
	Detail     []byte    // JSON summary of the run
}

func (advisoryRunRow) TableName() string { return "advisory_runs" }

var earlywarnMigrations = []Migration{
	{ID: "earlywarn/001_early_warnings", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&earlyWarningRow{}, &advisoryCursorRow{}, &advisoryRunRow{})
	}},
}
