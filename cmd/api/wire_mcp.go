package main

import (
	"context"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/mcp"
)

// wireMCP prepares the MCP listener (issue 19): off by default, switched
// at runtime through PUT /api/v1/settings/mcp; every replica follows the
// stored setting.
func (a *app) wireMCP(ctx context.Context, authSvc *auth.Service) *mcp.Listener {
	h := mcp.NewHandler(mcp.NewService(a.store), authSvc, a.log)
	l := mcp.NewListener(a.store, a.cfg.MCPHost, a.cfg.MCPPort, h, a.log)
	go l.Follow(ctx)
	return l
}
