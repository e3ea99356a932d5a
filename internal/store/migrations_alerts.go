package store

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// Rows of the alerts area (issue 17): notification channels, alert rules,
// the open alerts, the alert events (history) and their deliveries.

// notificationChannelRow is one channel. Config holds the non-secret
// settings as JSON; Secrets holds the secret ones (SMTP password, webhook
// URL, tokens, HMAC key) as encrypted JSON.
type notificationChannelRow struct {
	ID        string `gorm:"primaryKey;size:36"`
	Name      string `gorm:"size:100;not null;uniqueIndex"`
	Type      string `gorm:"size:16;not null"`
	Enabled   bool   `gorm:"not null"`
	System    bool   `gorm:"not null;default:false"`
	Config    string `gorm:"type:text;not null"`
	Secrets   string `gorm:"column:secrets;serializer:secret;type:bytes"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (notificationChannelRow) TableName() string { return "notification_channels" }

// alertRuleRow is one rule; GroupIDs, ChannelIDs and Params are JSON.
type alertRuleRow struct {
	ID              string `gorm:"primaryKey;size:36"`
	Name            string `gorm:"size:100;not null;uniqueIndex"`
	Type            string `gorm:"size:32;not null"`
	Enabled         bool   `gorm:"not null"`
	Severity        string `gorm:"size:16;not null"`
	AllServers      bool   `gorm:"not null"`
	GroupIDs        string `gorm:"column:group_ids;type:text;not null"`
	ChannelIDs      string `gorm:"column:channel_ids;type:text;not null"`
	Params          string `gorm:"type:text;not null"`
	CooldownMinutes int    `gorm:"not null"`
	CreatedBy       string `gorm:"size:36;not null;default:''"`
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (alertRuleRow) TableName() string { return "alert_rules" }

// alertOpenRow is an alert that is firing now: one per rule and subject
// (a server id, or "fleet" for fleet-wide rules). The primary key makes
// opening an alert idempotent across replicas.
type alertOpenRow struct {
	RuleID         string    `gorm:"primaryKey;size:36"`
	Subject        string    `gorm:"primaryKey;size:64"`
	OpenedAt       time.Time `gorm:"not null"`
	LastNotifiedAt time.Time `gorm:"not null"`
	Message        string    `gorm:"type:text;not null"`
}

func (alertOpenRow) TableName() string { return "alert_open" }

// alertEventRow is one notification-worthy change: firing, repeat (still
// firing after the cooldown) or resolved.
type alertEventRow struct {
	ID         string    `gorm:"primaryKey;size:36"`
	RuleID     string    `gorm:"size:36;not null;index"`
	RuleName   string    `gorm:"size:100;not null"`
	RuleType   string    `gorm:"size:32;not null"`
	Subject    string    `gorm:"size:64;not null;index"`
	ServerName string    `gorm:"size:255;not null;default:''"`
	Kind       string    `gorm:"size:16;not null"`
	Severity   string    `gorm:"size:16;not null"`
	Message    string    `gorm:"type:text;not null"`
	CreatedAt  time.Time `gorm:"not null;index"`
}

func (alertEventRow) TableName() string { return "alert_events" }

// alertDeliveryRow is the delivery of one event through one channel.
type alertDeliveryRow struct {
	ID          string `gorm:"primaryKey;size:36"`
	EventID     string `gorm:"size:36;not null;index"`
	ChannelID   string `gorm:"size:36;not null;index;index:alert_deliveries_queue,priority:1"`
	ChannelName string `gorm:"size:100;not null"`
	Status      string `gorm:"size:16;not null;index;index:alert_deliveries_queue,priority:2"`
	Attempts    int    `gorm:"not null"`
	LastError   string `gorm:"type:text;not null;default:''"`
	Response    string `gorm:"type:text;not null;default:''"`
	// The delivery queue is read by (channel_id, status, next_attempt_at):
	// a channel's oldest due rows of one status (alerts/002).
	NextAttemptAt *time.Time `gorm:"column:next_attempt_at;index:alert_deliveries_queue,priority:3"`
	UpdatedAt     time.Time  `gorm:"not null"`
}

func (alertDeliveryRow) TableName() string { return "alert_deliveries" }

// dataGenerationRow counts the writes of a table whose readers cache
// derived data across replicas (the alert evaluation's storage trends):
// a reader that saw the same generation may keep its copy.
type dataGenerationRow struct {
	Name string `gorm:"primaryKey;size:64"`
	Gen  int64  `gorm:"not null"`
}

func (dataGenerationRow) TableName() string { return "data_generations" }

var alertsMigrations = []Migration{
	{ID: "alerts/001_channels_rules_events", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&notificationChannelRow{}, &alertRuleRow{}, &alertOpenRow{}, &alertEventRow{}, &alertDeliveryRow{})
	}},
	// The deliveries table became the delivery queue (a pump claims a
	// channel's oldest due rows): index that read.
	{ID: "alerts/002_delivery_queue_index", Up: func(tx *gorm.DB) error {
		m := tx.Migrator()
		if m.HasIndex(&alertDeliveryRow{}, "alert_deliveries_queue") { // created by 001 on a fresh database
			return nil
		}
		return m.CreateIndex(&alertDeliveryRow{}, "alert_deliveries_queue")
	}},
	{ID: "alerts/003_data_generations", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&dataGenerationRow{})
	}},
	{ID: "alerts/004_default_vuln_db_rules", Up: addDefaultVulnDBRules},
}

// DefaultVulnDBRules are the rules every installation starts with for the
// vulnerability database's freshness tiers (issue 16): outdated from 48
// hours (warning) and critical from 7 days. They notify no channel until
// an operator adds one; their alerts show in the alert history. Being a
// migration, they are created once: an operator may change or delete them.
var DefaultVulnDBRules = []struct {
	Name, Severity string
	Hours          int
}{
	{"Vulnerability database outdated", "warning", 48},
	{"Vulnerability database critically outdated", "critical", 7 * 24},
}

func addDefaultVulnDBRules(tx *gorm.DB) error {
	now := time.Now().UTC()
	for _, d := range DefaultVulnDBRules {
		var n int64
		if err := tx.Model(&alertRuleRow{}).Where("name = ?", d.Name).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		row := alertRuleRow{ID: uuid.NewString(), Name: d.Name, Type: "vuln_db_outdated", Enabled: true, Severity: d.Severity,
			AllServers: true, GroupIDs: "[]", ChannelIDs: "[]", Params: fmt.Sprintf(`{"hours":%d}`, d.Hours),
			CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
	}
	return nil
}

func init() {
	registerEncrypted(EncryptedColumn{Table: "notification_channels", Column: "secrets", PK: "id"})
}
