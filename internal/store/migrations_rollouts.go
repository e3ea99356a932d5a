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
}
