package store

import (
	"time"

	"gorm.io/gorm"
)

// serverFirewallRow is a server's firewall and listening ports as LCM last
// read them back: the rules (JSON list of firewall.Rule) and the sockets
// of the last scan (JSON list of firewall.Socket). The summary (active,
// tool) is also on the server row, where the list and the status read it.
type serverFirewallRow struct {
	ServerID  string     `gorm:"primaryKey;size:36"`
	Tool      string     `gorm:"size:16;not null;default:''"`
	Active    bool       `gorm:"not null;default:false"`
	Rules     string     `gorm:"type:text;not null;default:'[]'"`
	CheckedAt *time.Time `gorm:"column:checked_at"`
	Ports     string     `gorm:"type:text;not null;default:'[]'"`
	ScannedAt *time.Time `gorm:"column:scanned_at"`
	Server    serverRow  `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (serverFirewallRow) TableName() string { return "server_firewall" }

// ipAllowlistRow is a named list of addresses/networks (JSON list of
// strings), reusable as the source of firewall rules.
type ipAllowlistRow struct {
	ID          string    `gorm:"primaryKey;size:36"`
	Name        string    `gorm:"size:64;not null;uniqueIndex"`
	Description string    `gorm:"size:512;not null;default:''"`
	Entries     string    `gorm:"type:text;not null;default:'[]'"`
	CreatedAt   time.Time `gorm:"not null"`
	UpdatedAt   time.Time `gorm:"not null"`
}

func (ipAllowlistRow) TableName() string { return "ip_allowlists" }

// firewallColumns are the server columns firewall/001 adds (a fresh
// database has them from serverRow already).
var firewallColumns = []string{"FirewallActive", "FirewallTool", "FirewallAt"}

var firewallMigrations = []Migration{
	{ID: "firewall/001_tables", Up: func(tx *gorm.DB) error {
		for _, c := range firewallColumns {
			if tx.Migrator().HasColumn(&serverRow{}, c) {
				continue
			}
			if err := tx.Migrator().AddColumn(&serverRow{}, c); err != nil {
				return err
			}
		}
		return tx.AutoMigrate(&serverFirewallRow{}, &ipAllowlistRow{})
	}},
}
