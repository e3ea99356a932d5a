package store

import (
	"time"

	"gorm.io/gorm"
)

// privilegeProfileRow is a privilege profile; its rules are JSON (a list of
// domain.ProfileRule), validated by the service before they are stored.
type privilegeProfileRow struct {
	ID          string    `gorm:"primaryKey;size:36"`
	Slug        string    `gorm:"size:32;not null;uniqueIndex"`
	Name        string    `gorm:"size:128;not null;uniqueIndex"`
	Description string    `gorm:"type:text;not null;default:''"`
	Kind        string    `gorm:"size:16;not null"`
	BuiltIn     bool      `gorm:"column:built_in;not null;default:false"`
	Rules       string    `gorm:"type:text;not null;default:'[]'"`
	CreatedAt   time.Time `gorm:"not null"`
	UpdatedAt   time.Time `gorm:"not null"`
}

func (privilegeProfileRow) TableName() string { return "privilege_profiles" }

// profileBlockRow is a rule template; params and variants are JSON.
type profileBlockRow struct {
	ID          string    `gorm:"primaryKey;size:36"`
	Slug        string    `gorm:"size:64;not null;uniqueIndex"`
	Name        string    `gorm:"size:128;not null;uniqueIndex"`
	Description string    `gorm:"type:text;not null;default:''"`
	BuiltIn     bool      `gorm:"column:built_in;not null;default:false"`
	Params      string    `gorm:"type:text;not null;default:'[]'"`
	RunAs       string    `gorm:"size:32;not null;default:''"`
	Variants    string    `gorm:"type:text;not null;default:'{}'"`
	CreatedAt   time.Time `gorm:"not null"`
	UpdatedAt   time.Time `gorm:"not null"`
}

func (profileBlockRow) TableName() string { return "profile_blocks" }

// profileBlockUseRow is a profile's use of a block, in order. A block in
// use cannot be deleted (RESTRICT); deleting a profile drops its uses.
type profileBlockUseRow struct {
	ProfileID string              `gorm:"primaryKey;size:36"`
	Position  int                 `gorm:"primaryKey"`
	BlockID   string              `gorm:"size:36;not null;index"`
	Params    string              `gorm:"type:text;not null;default:'{}'"`
	Profile   privilegeProfileRow `gorm:"foreignKey:ProfileID;constraint:OnDelete:CASCADE"`
	Block     profileBlockRow     `gorm:"foreignKey:BlockID;constraint:OnDelete:RESTRICT"`
}

func (profileBlockUseRow) TableName() string { return "profile_block_uses" }

// linuxUserRow is a person in the Linux users catalogue. The password is
// only ever a crypt(3) hash for /etc/shadow, and that hash is encrypted.
type linuxUserRow struct {
	ID               string     `gorm:"primaryKey;size:36"`
	Username         string     `gorm:"size:32;not null;uniqueIndex"`
	FullName         string     `gorm:"size:128;not null;default:''"`
	Email            string     `gorm:"size:254;not null;default:''"`
	Shell            string     `gorm:"size:128;not null;default:''"`
	AccountType      string     `gorm:"size:16;not null"`
	SFTPChroot       bool       `gorm:"column:sftp_chroot;not null;default:false"`
	DefaultProfileID *string    `gorm:"size:36;index"`
	PasswordHash     string     `gorm:"column:password_hash;serializer:secret;type:bytes"`
	PasswordSetAt    *time.Time `gorm:"column:password_set_at"`
	CreatedAt        time.Time  `gorm:"not null"`
	UpdatedAt        time.Time  `gorm:"not null"`

	DefaultProfile *privilegeProfileRow `gorm:"foreignKey:DefaultProfileID;constraint:OnDelete:RESTRICT"`
}

func (linuxUserRow) TableName() string { return "linux_users" }

// linuxUserKeyRow is one SSH public key of a Linux user.
type linuxUserKeyRow struct {
	ID          string       `gorm:"primaryKey;size:36"`
	UserID      string       `gorm:"size:36;not null;uniqueIndex:idx_linux_user_key_fp,priority:1"`
	Type        string       `gorm:"size:64;not null"`
	Bits        int          `gorm:"not null"`
	Fingerprint string       `gorm:"size:128;not null;uniqueIndex:idx_linux_user_key_fp,priority:2"`
	Comment     string       `gorm:"size:256;not null;default:''"`
	PublicKey   string       `gorm:"type:text;not null"`
	CreatedAt   time.Time    `gorm:"not null"`
	User        linuxUserRow `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
}

func (linuxUserKeyRow) TableName() string { return "linux_user_keys" }

// linuxUserActivationRow is an activation link: only the SHA-256 of its
// token is stored.
type linuxUserActivationRow struct {
	TokenHash string       `gorm:"primaryKey;size:64"`
	UserID    string       `gorm:"size:36;not null;index"`
	ExpiresAt time.Time    `gorm:"not null"`
	UsedAt    *time.Time   `gorm:"column:used_at"`
	CreatedAt time.Time    `gorm:"not null"`
	User      linuxUserRow `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
}

func (linuxUserActivationRow) TableName() string { return "linux_user_activations" }

// linuxUserAssignmentRow assigns a user to a server or a group with a
// profile (nil: the user's default profile).
type linuxUserAssignmentRow struct {
	ID         string               `gorm:"primaryKey;size:36"`
	UserID     string               `gorm:"size:36;not null;uniqueIndex:idx_linux_user_assignment,priority:1"`
	TargetType string               `gorm:"size:8;not null;uniqueIndex:idx_linux_user_assignment,priority:2"`
	TargetID   string               `gorm:"size:36;not null;uniqueIndex:idx_linux_user_assignment,priority:3;index"`
	ProfileID  *string              `gorm:"size:36;index"`
	CreatedAt  time.Time            `gorm:"not null"`
	User       linuxUserRow         `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
	Profile    *privilegeProfileRow `gorm:"foreignKey:ProfileID;constraint:OnDelete:RESTRICT"`
}

func (linuxUserAssignmentRow) TableName() string { return "linux_user_assignments" }

// linuxUserProvisionRow is the state of a user's account on one server as
// the last provisioning job left it. No foreign key to linux_users: a user
// still provisioned somewhere cannot be deleted (the service checks), and a
// decommissioned server's rows go with it.
type linuxUserProvisionRow struct {
	UserID      string    `gorm:"primaryKey;size:36"`
	ServerID    string    `gorm:"primaryKey;size:36;index"`
	Username    string    `gorm:"size:32;not null"`
	ProfileSlug string    `gorm:"size:32;not null;default:''"`
	State       string    `gorm:"size:16;not null"`
	JobID       string    `gorm:"size:36;not null;default:''"`
	Error       string    `gorm:"type:text;not null;default:''"`
	UpdatedAt   time.Time `gorm:"not null"`
	Server      serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (linuxUserProvisionRow) TableName() string { return "linux_user_provisions" }

// linuxUserScanRow is a server's last account scan (JSON list of
// actions.Account).
type linuxUserScanRow struct {
	ServerID  string    `gorm:"primaryKey;size:36"`
	Accounts  string    `gorm:"type:text;not null"`
	ScannedAt time.Time `gorm:"not null"`
	JobID     string    `gorm:"size:36;not null;default:''"`
	Server    serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (linuxUserScanRow) TableName() string { return "linux_user_scans" }

var linuxusersMigrations = []Migration{
	{ID: "linuxusers/001_profiles_blocks", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&privilegeProfileRow{}, &profileBlockRow{}, &profileBlockUseRow{})
	}},
	{ID: "linuxusers/002_catalogue", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&linuxUserRow{}, &linuxUserKeyRow{}, &linuxUserActivationRow{}, &linuxUserAssignmentRow{}, &linuxUserProvisionRow{})
	}},
	{ID: "linuxusers/003_scans", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&linuxUserScanRow{})
	}},
}

func init() {
	registerEncrypted(EncryptedColumn{Table: "linux_users", Column: "password_hash", PK: "id"})
}
