package store

import (
	"time"

	"gorm.io/gorm"
)

// Rows of the portal area (issue 8): portal messages (announcements) and
// the speech settings.

// announcementRow is one portal message. A nil StartsAt/EndsAt is an
// unbounded side of the visibility window.
type announcementRow struct {
	ID        string     `gorm:"primaryKey;size:36"`
	Title     string     `gorm:"size:200;not null"`
	Body      string     `gorm:"type:text;not null"`
	Severity  string     `gorm:"size:16;not null"`
	Active    bool       `gorm:"not null;index"`
	StartsAt  *time.Time `gorm:"column:starts_at"`
	EndsAt    *time.Time `gorm:"column:ends_at"`
	CreatedAt time.Time  `gorm:"not null"`
	UpdatedAt time.Time  `gorm:"not null"`
}

func (announcementRow) TableName() string { return "announcements" }

// speechSettingsRow is the single row (ID speechSettingsID) of the speech
// settings. The provider key is encrypted; Revision grows with every save
// so replicas notice a change with one cheap read.
type speechSettingsRow struct {
	ID          string `gorm:"primaryKey;size:16"`
	Provider    string `gorm:"size:16;not null"`
	APIKey      string `gorm:"column:api_key;serializer:secret;type:bytes"`
	KeyVerified bool   `gorm:"column:key_verified;not null"`
	BaseURL     string `gorm:"column:base_url;size:512;not null"`
	Model       string `gorm:"column:model;size:256;not null"`
	STTLanguage string `gorm:"column:stt_language;size:35;not null"`
	TTSLanguage string `gorm:"column:tts_language;size:35;not null"`
	Phrases     string `gorm:"column:phrases;type:text;not null"` // JSON array of strings
	Revision    int64  `gorm:"not null"`
	UpdatedAt   time.Time
}

func (speechSettingsRow) TableName() string { return "speech_settings" }

var portalMigrations = []Migration{
	{ID: "portal/001_announcements", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&announcementRow{})
	}},
	{ID: "portal/002_speech_settings", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&speechSettingsRow{})
	}},
}

func init() {
	registerEncrypted(EncryptedColumn{Table: "speech_settings", Column: "api_key", PK: "id"})
}
