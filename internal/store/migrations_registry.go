package store

import (
	"time"

	"gorm.io/gorm"
)

// Rows of the registry area (issue 15, newer-image check): the container
// registries LCM holds credentials for. The password (or access token) is
// encrypted at rest like every stored secret.

// registryCredentialRow is one registry host with its credentials.
type registryCredentialRow struct {
	ID        string `gorm:"primaryKey;size:36"`
	Host      string `gorm:"size:255;not null;uniqueIndex"`
	Username  string `gorm:"size:255;not null;default:''"`
	Password  string `gorm:"column:password;serializer:secret;type:bytes"`
	PlainHTTP bool   `gorm:"column:plain_http;not null;default:false"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (registryCredentialRow) TableName() string { return "registry_credentials" }

var registryMigrations = []Migration{
	{ID: "registry/001_credentials", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&registryCredentialRow{})
	}},
}

func init() {
	registerEncrypted(EncryptedColumn{Table: "registry_credentials", Column: "password", PK: "id"})
}
