package main

import (
	"context"
	"fmt"

	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/linuxusers"
)

// wireLinuxUsers builds the Linux users service (issue 14), registers its
// job finish hooks, follows servers joining and leaving groups, and refreshes the built-in profiles and blocks.
func (a *app) wireLinuxUsers(ctx context.Context, js *jobs.Service, fs *fleet.Service) (*linuxusers.Service, error) {
	svc := linuxusers.New(a.store, js, a.log)
	svc.RegisterJobs()
	fs.OnMembership(svc.GroupMembershipChanged)
	if err := svc.SeedBuiltins(ctx); err != nil {
		return nil, fmt.Errorf("seed built-in privilege profiles: %w", err)
	}
	return svc, nil
}
