package main

import (
	"context"
	"os"

	"github.com/lcmproject/lcm/internal/updates"
	"github.com/lcmproject/lcm/internal/version"
)

// wireUpdates builds the update check against the configured release feed
// (config key updates, docs/updates.md).
func (a *app) wireUpdates() {
	u := a.cfg.Updates
	exe, _ := os.Executable()
	a.updates = updates.New(updates.Options{Store: a.store, FeedURL: u.FeedURL, Channel: u.Channel,
		Current: version.Get().Version, DailyCheck: !u.DailyCheckDisabled, Log: a.log, Executable: exe})
}

// updateCheckTask is the daily update check of the schedule registry; nil
// (no task) without a feed or when opted out.
func (a *app) updateCheckTask() func(context.Context) error {
	if a.updates == nil || a.cfg.Updates.FeedURL == "" || a.cfg.Updates.DailyCheckDisabled {
		return nil
	}
	return a.updates.RunScheduled
}
