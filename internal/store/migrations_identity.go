package store

import (
	"time"

	"gorm.io/gorm"
)

// userRow is an LCM login user.
type userRow struct {
	ID           string `gorm:"primaryKey;size:36"`
	Username     string `gorm:"size:64;not null;uniqueIndex"`
	FirstName    string `gorm:"size:128"`
	LastName     string `gorm:"size:128"`
	DisplayName  string `gorm:"size:128"`
	Email        string `gorm:"size:254;index"`
	PasswordHash string `gorm:"size:255"`
	IsSystem     bool   `gorm:"not null;default:false"`
	Active       bool   `gorm:"not null;default:true"`
	TOTPSecret   string `gorm:"column:totp_secret;serializer:secret;type:bytes"`
	TOTPEnabled  bool   `gorm:"column:totp_enabled;not null;default:false"`
	// TOTPLastStep is the last accepted time step: a code is never accepted twice.
	TOTPLastStep int64 `gorm:"column:totp_last_step;not null;default:0"`
	CreatedAt    time.Time
	UpdatedAt    time.Time
	LastLoginAt  *time.Time
	// SessionsValidAfter (Unix seconds) ends every session token issued
	// before it: logout, password change and deactivation set it.
	SessionsValidAfter int64 `gorm:"column:sessions_valid_after;not null;default:0"`
}

func (userRow) TableName() string { return "users" }

type roleRow struct {
	ID          string `gorm:"primaryKey;size:36"`
	Name        string `gorm:"size:64;not null;uniqueIndex"`
	Description string `gorm:"size:255"`
	CreatedAt   time.Time
}

func (roleRow) TableName() string { return "roles" }

type permissionRow struct {
	Code string `gorm:"primaryKey;size:64"`
}

func (permissionRow) TableName() string { return "permissions" }

type rolePermissionRow struct {
	RoleID         string        `gorm:"primaryKey;size:36"`
	PermissionCode string        `gorm:"primaryKey;size:64"`
	Role           roleRow       `gorm:"foreignKey:RoleID;constraint:OnDelete:CASCADE"`
	Permission     permissionRow `gorm:"foreignKey:PermissionCode;constraint:OnDelete:CASCADE"`
}

func (rolePermissionRow) TableName() string { return "role_permissions" }

type userRoleRow struct {
	UserID string  `gorm:"primaryKey;size:36"`
	RoleID string  `gorm:"primaryKey;size:36;index"`
	User   userRow `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
	Role   roleRow `gorm:"foreignKey:RoleID;constraint:OnDelete:CASCADE"`
}

func (userRoleRow) TableName() string { return "user_roles" }

var identityMigrations = []Migration{
	{ID: "identity/001_users_roles", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&userRow{}, &roleRow{}, &permissionRow{}, &rolePermissionRow{}, &userRoleRow{})
	}},
	{ID: "identity/002_api_keys", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&apiKeyRow{})
	}},
	{ID: "identity/003_audit", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&auditRow{})
	}},
	{ID: "identity/004_auth_tokens", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&authTokenRow{})
	}},
	{ID: "identity/005_user_sessions_valid_after", Up: func(tx *gorm.DB) error {
		// 001 creates the column on a fresh database already (it migrates
		// the current model); only older databases need it added.
		if tx.Migrator().HasColumn(&userRow{}, "SessionsValidAfter") {
			return nil
		}
		return tx.Migrator().AddColumn(&userRow{}, "SessionsValidAfter")
	}},
	{ID: "identity/006_recovery_codes", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&recoveryCodeRow{})
	}},
}

func init() {
	registerEncrypted(EncryptedColumn{Table: "users", Column: "totp_secret", PK: "id"})
}
