package store

import (
	"time"

	"gorm.io/gorm"
)

// containerInventoryRow is a server's last container inventory (issue 15):
// the JSON of containers.Inventory as the last container job read it, the
// outcome of the last container action, and the newer-image check's
// answers (JSON list of containers.ImageUpdate; empty: never checked).
type containerInventoryRow struct {
	ServerID         string     `gorm:"primaryKey;size:36"`
	Data             string     `gorm:"type:text;not null"`
	RefreshedAt      time.Time  `gorm:"not null"`
	JobID            string     `gorm:"size:36;not null;default:''"`
	Outcome          string     `gorm:"type:text;not null;default:''"`
	Updates          string     `gorm:"type:text;not null;default:''"`
	UpdatesCheckedAt *time.Time `gorm:""`
	Server           serverRow  `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (containerInventoryRow) TableName() string { return "container_inventories" }

// containerCVEMarkRow marks a container (by engine and name, which survive
// a re-create by compose) CVE-relevant: its image feeds the vulnerability
// scan and its CVEs count for the server's status.
type containerCVEMarkRow struct {
	ServerID  string    `gorm:"primaryKey;size:36"`
	Engine    string    `gorm:"primaryKey;size:16"`
	Container string    `gorm:"primaryKey;size:128"`
	MarkedBy  string    `gorm:"size:36;not null;default:''"`
	MarkedAt  time.Time `gorm:"not null"`
	Server    serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (containerCVEMarkRow) TableName() string { return "container_cve_marks" }

var containersMigrations = []Migration{
	{ID: "containers/001_inventories", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&containerInventoryRow{}, &containerCVEMarkRow{})
	}},
}
