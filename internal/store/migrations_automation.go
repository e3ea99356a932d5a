package store

import (
	"time"

	"gorm.io/gorm"
)

// autoScheduleRow is a group schedule (issue 20).
type autoScheduleRow struct {
	ID               string     `gorm:"primaryKey;size:36"`
	GroupID          string     `gorm:"size:36;not null;index"`
	Group            groupRow   `gorm:"foreignKey:GroupID;constraint:OnDelete:CASCADE"`
	Name             string     `gorm:"size:128;not null"`
	Cron             string     `gorm:"size:128;not null"`
	TimeZone         string     `gorm:"column:time_zone;size:64;not null;default:''"`
	WindowStart      string     `gorm:"size:5;not null;default:''"`
	WindowEnd        string     `gorm:"size:5;not null;default:''"`
	OutsideWindow    string     `gorm:"size:8;not null;default:'wait'"`
	Enabled          bool       `gorm:"not null;default:true"`
	RequiresApproval bool       `gorm:"not null;default:false"`
	LastRunAt        *time.Time `gorm:"column:last_run_at"`
	NextRunAt        *time.Time `gorm:"column:next_run_at;index"`
	CreatedBy        string     `gorm:"size:36;not null;default:''"`
	// UpdatedBy is the last user who changed the schedule or one of its
	// rules: its cron runs are requested in that user's name.
	UpdatedBy string    `gorm:"size:36;not null;default:''"`
	CreatedAt time.Time `gorm:"not null"`
	UpdatedAt time.Time `gorm:"not null"`
}

func (autoScheduleRow) TableName() string { return "automation_schedules" }

// autoRuleRow is one ordered rule of a schedule; params are JSON.
type autoRuleRow struct {
	ID         string          `gorm:"primaryKey;size:36"`
	ScheduleID string          `gorm:"size:36;not null;index"`
	Schedule   autoScheduleRow `gorm:"foreignKey:ScheduleID;constraint:OnDelete:CASCADE"`
	Position   int             `gorm:"not null;default:0"`
	Type       string          `gorm:"size:32;not null"`
	Params     string          `gorm:"type:text;not null;default:'{}'"`
	Enabled    bool            `gorm:"not null;default:true"`
	CreatedAt  time.Time       `gorm:"not null"`
	UpdatedAt  time.Time       `gorm:"not null"`
}

func (autoRuleRow) TableName() string { return "automation_rules" }

// autoRunRow is one run of a schedule. (schedule_id, slot_key) is
// unique: a cron slot is run once, however many replicas fire it.
type autoRunRow struct {
	ID         string          `gorm:"primaryKey;size:36"`
	ScheduleID string          `gorm:"size:36;not null;uniqueIndex:idx_automation_run_slot,priority:1;index"`
	Schedule   autoScheduleRow `gorm:"foreignKey:ScheduleID;constraint:OnDelete:CASCADE"`
	GroupID    string          `gorm:"size:36;not null"`
	SlotKey    string          `gorm:"size:64;not null;uniqueIndex:idx_automation_run_slot,priority:2"`
	Trigger    string          `gorm:"size:16;not null"`
	Status     string          `gorm:"size:16;not null;index"`
	Reason     string          `gorm:"type:text;not null;default:''"`
	DueAt      time.Time       `gorm:"not null"`
	RuleIndex  int             `gorm:"not null;default:0"`
	Owner      string          `gorm:"size:128;not null;default:''"`
	Heartbeat  *time.Time      `gorm:"column:heartbeat_at"`
	StartedAt  *time.Time
	FinishedAt *time.Time
	Steps      string    `gorm:"type:text;not null;default:'[]'"`
	CreatedAt  time.Time `gorm:"not null;index"`
	// RequestedBy is the user the run is for: who triggered it, or for a
	// cron run the schedule's last editor.
	RequestedBy string `gorm:"size:36;not null;default:''"`
}

func (autoRunRow) TableName() string { return "automation_runs" }

// groupAutomationRow is a group's priority and maintenance window.
type groupAutomationRow struct {
	GroupID     string    `gorm:"primaryKey;size:36"`
	Group       groupRow  `gorm:"foreignKey:GroupID;constraint:OnDelete:CASCADE"`
	Priority    int       `gorm:"not null;default:100"`
	WindowStart string    `gorm:"size:5;not null;default:''"`
	WindowEnd   string    `gorm:"size:5;not null;default:''"`
	WindowTZ    string    `gorm:"column:window_tz;size:64;not null;default:''"`
	UpdatedAt   time.Time `gorm:"not null"`
}

func (groupAutomationRow) TableName() string { return "automation_group_settings" }

// customActionRow is a reusable command list (JSON list of strings).
type customActionRow struct {
	ID               string    `gorm:"primaryKey;size:36"`
	Name             string    `gorm:"size:128;not null;uniqueIndex"`
	Description      string    `gorm:"type:text;not null;default:''"`
	Commands         string    `gorm:"type:text;not null;default:'[]'"`
	RequiresApproval bool      `gorm:"not null;default:false"`
	CreatedAt        time.Time `gorm:"not null"`
	UpdatedAt        time.Time `gorm:"not null"`
}

func (customActionRow) TableName() string { return "custom_actions" }

// maintenanceRow is a server in maintenance mode.
type maintenanceRow struct {
	ServerID  string     `gorm:"primaryKey;size:36"`
	Server    serverRow  `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
	Reason    string     `gorm:"type:text;not null;default:''"`
	StartedBy string     `gorm:"size:128;not null;default:''"`
	StartedAt time.Time  `gorm:"not null"`
	EndsAt    *time.Time `gorm:"index"`
}

func (maintenanceRow) TableName() string { return "server_maintenance" }

var automationMigrations = []Migration{
	{ID: "automation/001_schedules_actions_maintenance", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&autoScheduleRow{}, &autoRuleRow{}, &autoRunRow{}, &groupAutomationRow{}, &customActionRow{}, &maintenanceRow{})
	}},
	{ID: "automation/002_requesters", Up: func(tx *gorm.DB) error {
		// On a fresh database 001 created them already.
		for _, c := range []struct {
			row  any
			name string
		}{{&autoScheduleRow{}, "UpdatedBy"}, {&autoRunRow{}, "RequestedBy"}} {
			if tx.Migrator().HasColumn(c.row, c.name) {
				continue
			}
			if err := tx.Migrator().AddColumn(c.row, c.name); err != nil {
				return err
			}
		}
		// Existing schedules: their creator is the last editor known.
		return tx.Model(&autoScheduleRow{}).Where("updated_by = ''").Update("updated_by", gorm.Expr("created_by")).Error
	}},
}
