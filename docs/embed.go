// Package docs embeds the operator documentation (this directory's *.md)
// into the binaries, so lcm-api serves it as help at GET /api/v1/docs
// (internal/helpdocs, docs/updates.md).
package docs

import "embed"

// FS holds every *.md file of the docs directory.
//
//go:embed *.md
var FS embed.FS
