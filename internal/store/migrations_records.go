package store

import (
	"time"

	"gorm.io/gorm"
)

// Rows of the records area (projects, zones, record sets, templates, sync
// groups, source hosts). Record values and template/sync-group sets are
// stored as JSON text: they are always read and written whole, and the
// canonical form the records package produces makes text equality
// semantic equality.

type projectRow struct {
	ID          string `gorm:"primaryKey;size:36"`
	Name        string `gorm:"size:128;not null;uniqueIndex"`
	Description string `gorm:"size:1024"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (projectRow) TableName() string { return "projects" }

type projectMemberRow struct {
	ProjectID string     `gorm:"primaryKey;size:36"`
	UserID    string     `gorm:"primaryKey;size:36;index"`
	Role      string     `gorm:"size:16;not null"`
	CreatedAt time.Time  `gorm:"not null"`
	Project   projectRow `gorm:"foreignKey:ProjectID;constraint:OnDelete:CASCADE"`
	User      userRow    `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
}

func (projectMemberRow) TableName() string { return "project_members" }

type zoneRow struct {
	ID         string     `gorm:"primaryKey;size:36"`
	ProjectID  string     `gorm:"size:36;not null;index"`
	Name       string     `gorm:"size:255;not null;uniqueIndex"`
	DefaultTTL int64      `gorm:"column:default_ttl;not null"`
	MName      string     `gorm:"column:mname;size:255;not null"`
	RName      string     `gorm:"column:rname;size:255;not null"`
	Refresh    int64      `gorm:"not null"`
	Retry      int64      `gorm:"not null"`
	Expire     int64      `gorm:"not null"`
	Minimum    int64      `gorm:"not null"`
	Serial     int64      `gorm:"not null"` // uint32 in DNS; int64 so PostgreSQL holds it
	CreatedAt  time.Time  `gorm:"not null"`
	UpdatedAt  time.Time  `gorm:"not null"`
	Project    projectRow `gorm:"foreignKey:ProjectID;constraint:OnDelete:CASCADE"`
}

func (zoneRow) TableName() string { return "zones" }

type recordSetRow struct {
	ID         string    `gorm:"primaryKey;size:36"`
	ZoneID     string    `gorm:"size:36;not null;uniqueIndex:idx_record_sets_key,priority:1"`
	Name       string    `gorm:"size:255;not null;uniqueIndex:idx_record_sets_key,priority:2"`
	Type       string    `gorm:"size:10;not null;uniqueIndex:idx_record_sets_key,priority:3"`
	TTL        *int64    `gorm:"column:ttl"`
	Records    string    `gorm:"type:text;not null"` // JSON array of canonical values
	OriginKind string    `gorm:"size:16;not null;index:idx_record_sets_origin,priority:1"`
	OriginID   string    `gorm:"size:36;not null;default:'';index:idx_record_sets_origin,priority:2"`
	UpdatedAt  time.Time `gorm:"not null"`
	Zone       zoneRow   `gorm:"foreignKey:ZoneID;constraint:OnDelete:CASCADE"`
}

func (recordSetRow) TableName() string { return "record_sets" }

type templateRow struct {
	ID        string     `gorm:"primaryKey;size:36"`
	ProjectID string     `gorm:"size:36;not null;uniqueIndex:idx_templates_name,priority:1"`
	Name      string     `gorm:"size:128;not null;uniqueIndex:idx_templates_name,priority:2"`
	Sets      string     `gorm:"type:text;not null"` // JSON array of sets
	CreatedAt time.Time  `gorm:"not null"`
	UpdatedAt time.Time  `gorm:"not null"`
	Project   projectRow `gorm:"foreignKey:ProjectID;constraint:OnDelete:CASCADE"`
}

func (templateRow) TableName() string { return "record_templates" }

type syncGroupRow struct {
	ID        string    `gorm:"primaryKey;size:36"`
	Name      string    `gorm:"size:128;not null;uniqueIndex"`
	Priority  int       `gorm:"not null"`
	OwnerID   string    `gorm:"size:36;not null;index"`
	Sets      string    `gorm:"type:text;not null"` // JSON array of sets
	CreatedAt time.Time `gorm:"not null"`
	UpdatedAt time.Time `gorm:"not null"`
}

func (syncGroupRow) TableName() string { return "sync_groups" }

type syncGroupMemberRow struct {
	GroupID   string       `gorm:"primaryKey;size:36"`
	ZoneID    string       `gorm:"primaryKey;size:36;index"`
	CreatedAt time.Time    `gorm:"not null"`
	Group     syncGroupRow `gorm:"foreignKey:GroupID;constraint:OnDelete:CASCADE"`
	Zone      zoneRow      `gorm:"foreignKey:ZoneID;constraint:OnDelete:CASCADE"`
}

func (syncGroupMemberRow) TableName() string { return "sync_group_members" }

type sourceHostRow struct {
	ID        string     `gorm:"primaryKey;size:36"`
	ProjectID string     `gorm:"size:36;not null;uniqueIndex:idx_source_hosts_name,priority:1"`
	Name      string     `gorm:"size:128;not null;uniqueIndex:idx_source_hosts_name,priority:2"`
	IPv4      string     `gorm:"column:ipv4;type:text;not null"` // JSON array
	IPv6      string     `gorm:"column:ipv6;type:text;not null"` // JSON array
	CreatedAt time.Time  `gorm:"not null"`
	UpdatedAt time.Time  `gorm:"not null"`
	Project   projectRow `gorm:"foreignKey:ProjectID;constraint:OnDelete:CASCADE"`
}

func (sourceHostRow) TableName() string { return "source_hosts" }

var recordsMigrations = []Migration{
	{ID: "records/001_projects_zones_sets", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&projectRow{}, &projectMemberRow{}, &zoneRow{}, &recordSetRow{},
			&templateRow{}, &syncGroupRow{}, &syncGroupMemberRow{}, &sourceHostRow{})
	}},
}
