package main

import (
	"context"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/mcp"
	"github.com/lcmproject/lcm/internal/safe"
)

// wireMCP prepares the MCP listener (issue 19): off by default, switched
// at runtime through PUT /api/v1/settings/mcp; every replica follows the
// stored setting.
func (a *app) wireMCP(ctx context.Context, authSvc *auth.Service) *mcp.Listener {
	h := mcp.NewHandler(mcp.NewService(a.store), authSvc, a.log)
	l := mcp.NewListener(a.store, a.cfg.MCPHost, a.cfg.MCPPort, h, a.log)
	go safe.Supervise(ctx, "MCP listener follower", func(ctx context.Context) error { l.Follow(ctx); return nil })
	return l
}
