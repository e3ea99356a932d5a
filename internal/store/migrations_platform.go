package store

import (
	"time"

	"gorm.io/gorm"
)

// metaRow holds facts about the database itself (e.g. the master key id).
type metaRow struct {
	Key       string `gorm:"primaryKey;size:191"`
	Value     string `gorm:"not null"`
	UpdatedAt time.Time
}

func (metaRow) TableName() string { return "lcm_meta" }

// settingRow holds one runtime setting as JSON, shared by all replicas.
type settingRow struct {
	Key       string `gorm:"primaryKey;size:191"`
	Value     string `gorm:"not null"`
	UpdatedAt time.Time
}

func (settingRow) TableName() string { return "settings" }

// updateMigrationRow records a version-bound data migration.
type updateMigrationRow struct {
	Name      string `gorm:"primaryKey;size:191"`
	Version   string `gorm:"size:64;not null"`
	AppliedAt time.Time
}

func (updateMigrationRow) TableName() string { return "update_migrations" }

// certificateRow is a TLS certificate with its private key encrypted.
type certificateRow struct {
	Name      string `gorm:"primaryKey;size:64"`
	CertPEM   string `gorm:"not null"`
	KeyPEM    string `gorm:"serializer:secret;type:bytes"`
	CreatedAt time.Time
}

func (certificateRow) TableName() string { return "certificates" }

var platformMigrations = []Migration{
	{ID: "platform/001_meta_settings", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&metaRow{}, &settingRow{}, &updateMigrationRow{})
	}},
	{ID: "platform/002_certificates", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&certificateRow{})
	}},
}

func init() {
	registerEncrypted(EncryptedColumn{Table: "certificates", Column: "key_pem", PK: "name"})
}
