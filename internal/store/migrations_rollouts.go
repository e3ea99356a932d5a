package store

import "gorm.io/gorm"

// rolloutsMigrations: staged rollouts and approvals.
var rolloutsMigrations = []Migration{
	{ID: "rollouts/001_rollouts", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&rolloutRow{}, &rolloutItemRow{})
	}},
	{ID: "rollouts/002_approvals", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&approvalRow{})
	}},
	{ID: "rollouts/003_action_params", Up: func(tx *gorm.DB) error {
		if tx.Migrator().HasColumn(&rolloutRow{}, "ActionParams") {
			return nil // a fresh database: 001 created it
		}
		return tx.Migrator().AddColumn(&rolloutRow{}, "ActionParams")
	}},
}
