// Package mcp serves the read-only fleet view for AI agents: the curated
// server record (spec: "Server view (MCP)"), the fleet summary and the
// vulnerability and package reads, over the Model Context Protocol on its
// own listener. Nothing here changes anything, and nothing here can return
// a secret: the view is built field by field from non-secret columns only.
package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
)

// ServerView is the curated server record. It never carries passwords,
// login users, private or public keys, host-key fingerprints or agent
// tokens (spec); a test walks every tool's output for them.
type ServerView struct {
	ID               string       `json:"id"`
	Name             string       `json:"name"`
	Host             string       `json:"host"`
	IPAddresses      []string     `json:"ip_addresses"`
	GroupIDs         []string     `json:"group_ids"`
	OSName           string       `json:"os_name"`
	OSVersion        string       `json:"os_version"`
	OSID             string       `json:"os_id"`
	KernelVersion    string       `json:"kernel_version"`
	Virtualization   string       `json:"virtualization"`
	Transport        string       `json:"transport"`
	Joined           bool         `json:"joined"`
	Reachable        bool         `json:"reachable"`
	LastSeenAt       *time.Time   `json:"last_seen_at"`
	Status           string       `json:"status"`
	Insights         []InsightOut `json:"insights"`
	CPUModel         string       `json:"cpu_model"`
	CPUCores         int          `json:"cpu_cores"`
	MemTotalMB       uint64       `json:"mem_total_mb"`
	MemUsedMB        uint64       `json:"mem_used_mb"`
	DiskTotalMB      uint64       `json:"disk_total_mb"`
	DiskUsedMB       uint64       `json:"disk_used_mb"`
	DiskUsagePercent float64      `json:"disk_usage_percent"`
	OutdatedPackages int          `json:"outdated_packages"`
	SecurityUpdates  int          `json:"security_updates"`
	RebootRequired   bool         `json:"reboot_required"`
	CVECritical      int          `json:"cve_critical"`
	CVEHigh          int          `json:"cve_high"`
	SSHHardened      bool         `json:"ssh_hardened" jsonschema:"password logins to sshd are off, proven by reading back the effective sshd configuration"`
	RootLogin        string       `json:"root_login" jsonschema:"sshd's effective PermitRootLogin as last proven (yes, no, prohibit-password, forced-commands-only); empty when never read back"`
	SudoRestricted   bool         `json:"sudo_restricted" jsonschema:"the management user's sudo is restricted to LCM's helper (proven)"`
	FirewallActive   bool         `json:"firewall_active" jsonschema:"the host firewall was last read back as active"`
	FirewallTool     string       `json:"firewall_tool" jsonschema:"the firewall backend found on the server (ufw, firewalld, nftables); empty when never read back"`
	HardeningIndex   *int         `json:"hardening_index" jsonschema:"0 to 100: 25 points for each proven check (SSH hardened, root login without password, restricted sudo, active firewall); null when LCM has never read any of them back"`

	// unreachable follows the status model (status.UnreachableAfter
	// failed contacts in a row), so fleet_summary agrees with by_status.
	unreachable bool
}

// InsightOut is one line of a server's traffic-light explanation.
type InsightOut struct {
	Level string `json:"level"`
	Code  string `json:"code"`
	Text  string `json:"text"`
}

// Store is what the view reads (system scope; visibility is applied per
// request through VisibleGroups).
type Store interface {
	FleetVersion() store.FleetVersion
	FleetChangesSince(v store.FleetVersion) (store.FleetVersion, []string, bool)
	ListServers(ctx context.Context, sc store.Scope, f store.ServerFilter) ([]domain.Server, error)
	ServersByID(ctx context.Context, sc store.Scope, ids []string) ([]domain.Server, error)
	LoadStatusInputsMany(ctx context.Context, ids []string) (map[string]store.StatusInputs, error)
	StatusOf(ctx context.Context, sc store.Scope, ids []string) (map[string]store.StatusRecord, error)
	FactsJSONOf(ctx context.Context, ids []string) (map[string][]byte, error)
	VisibleGroups(ctx context.Context, sc store.Scope) (map[string]bool, bool, error)
	ListFindings(ctx context.Context, sc store.Scope, f store.FindingsFilter) ([]store.FindingRecord, int64, error)
	ServerOutdated(ctx context.Context, sc store.Scope, id string) ([]store.OutdatedRecord, error)
}

// fleetCache holds every server's view, sorted by name, brought up to date
// from the store's change tracking (like the REST whole-fleet listing):
// with 10,000 servers, decrypting and decorating every server per call
// would cost hundreds of milliseconds; patching the changed ones costs
// little. Visibility is filtered per request.
type fleetCache struct {
	st    Store
	mu    sync.Mutex
	valid bool
	ver   store.FleetVersion
	items []ServerView
}

// maxPatch is the most changed servers patched instead of a rebuild.
const maxPatch = 500

// snapshot returns the up-to-date views (a slice the caller must not
// modify: later patches build a new one).
func (c *fleetCache) snapshot(ctx context.Context) ([]ServerView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid {
		cur, ids, ok := c.st.FleetChangesSince(c.ver)
		switch {
		case ok && len(ids) == 0:
			return c.items, nil
		case ok && len(ids) <= maxPatch:
			list, err := c.st.ServersByID(ctx, store.SystemScope, ids)
			if err != nil {
				return nil, err
			}
			fresh, err := c.build(ctx, list)
			if err != nil {
				return nil, err
			}
			changed := make(map[string]bool, len(ids))
			for _, id := range ids {
				changed[id] = true
			}
			items := make([]ServerView, 0, len(c.items)+len(fresh))
			for _, it := range c.items {
				if !changed[it.ID] {
					items = append(items, it)
				}
			}
			items = append(items, fresh...)
			sortViews(items)
			c.ver, c.items = cur, items
			return items, nil
		}
	}
	ver := c.st.FleetVersion() // before the reads: a change during them is seen next time
	list, err := c.st.ListServers(ctx, store.SystemScope, store.ServerFilter{})
	if err != nil {
		return nil, err
	}
	items, err := c.build(ctx, list)
	if err != nil {
		return nil, err
	}
	sortViews(items)
	c.valid, c.ver, c.items = true, ver, items
	return items, nil
}

func sortViews(v []ServerView) {
	slices.SortFunc(v, func(a, b ServerView) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// build turns servers into views with their status, facts and findings.
func (c *fleetCache) build(ctx context.Context, list []domain.Server) ([]ServerView, error) {
	out := make([]ServerView, 0, len(list))
	const batch = 500
	for i := 0; i < len(list); i += batch {
		part := list[i:min(i+batch, len(list))]
		ids := make([]string, len(part))
		for j, s := range part {
			ids[j] = s.ID
		}
		inputs, err := c.st.LoadStatusInputsMany(ctx, ids)
		if err != nil {
			return nil, err
		}
		stat, err := c.st.StatusOf(ctx, store.SystemScope, ids)
		if err != nil {
			return nil, err
		}
		fj, err := c.st.FactsJSONOf(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, s := range part {
			out = append(out, viewOf(s, inputs[s.ID], stat[s.ID], fj[s.ID]))
		}
	}
	return out, nil
}

// HardeningIndex scores what LCM has proven about a server's hardening,
// 0 to 100, 25 points per check: password logins to sshd off, root login
// not by password (PermitRootLogin no, prohibit-password or
// forced-commands-only), the management user's sudo restricted, a firewall
// active. A check never read back scores nothing (proven, not claimed).
// nil when none of the four was ever read back: nothing is known. The
// reference derives the index from Lynis; LCM runs no Lynis, so the index
// is built from its own proofs (docs/mcp.md).
func HardeningIndex(sshHardened bool, h domain.Hardening) *int {
	if h.SSHHardenedAt == nil && h.RootLoginAt == nil && h.SudoModeAt == nil && h.FirewallAt == nil && !sshHardened {
		return nil
	}
	n := 0
	if sshHardened {
		n += 25
	}
	switch h.RootLogin {
	case "no", "prohibit-password", "without-password", "forced-commands-only":
		if h.RootLoginAt != nil {
			n += 25
		}
	}
	if h.SudoMode == domain.SudoRestricted && h.SudoModeAt != nil {
		n += 25
	}
	if h.FirewallActive && h.FirewallAt != nil {
		n += 25
	}
	return &n
}

// viewOf assembles the curated record from non-secret fields only.
func viewOf(s domain.Server, in store.StatusInputs, st store.StatusRecord, factsJSON []byte) ServerView {
	v := ServerView{
		ID: s.ID, Name: s.Name, Host: s.Host, IPAddresses: []string{}, GroupIDs: slices.Clone(s.GroupIDs),
		OSName: s.OSName, OSVersion: s.OSVersion, KernelVersion: s.Kernel, Virtualization: s.Virtualization,
		Transport: s.Transport, Joined: s.Joined, LastSeenAt: s.LastSeenAt, Status: string(s.Status),
		Insights: []InsightOut{}, OutdatedPackages: s.UpdatesAvail, SecurityUpdates: s.SecurityAvail,
		RebootRequired: s.RebootRequired, SSHHardened: s.SSHHardened,
		RootLogin: s.Hardening.RootLogin, SudoRestricted: s.Hardening.SudoMode == domain.SudoRestricted && s.Hardening.SudoModeAt != nil,
		FirewallActive: s.Hardening.FirewallActive, FirewallTool: s.Hardening.FirewallTool,
		HardeningIndex: HardeningIndex(s.SSHHardened, s.Hardening),
	}
	// Reachability is the status model's: unreachable after
	// status.UnreachableAfter failed contacts in a row; reachable once
	// contacted and not unreachable (a single failure is a blip, yellow).
	contacted := s.LastSeenAt != nil || in.LastSeenAt != nil || in.Facts != nil
	v.unreachable = in.FailedContacts >= status.UnreachableAfter
	v.Reachable = contacted && !v.unreachable
	if v.GroupIDs == nil {
		v.GroupIDs = []string{}
	}
	if st.Status != "" {
		v.Status = st.Status
	}
	if len(st.InsightsJSON) > 0 {
		var ins []status.Insight
		if json.Unmarshal(st.InsightsJSON, &ins) == nil {
			for _, i := range ins {
				v.Insights = append(v.Insights, InsightOut{Level: string(i.Level), Code: i.Code, Text: i.Text})
			}
		}
	}
	if f := in.Facts; f != nil {
		v.OutdatedPackages, v.SecurityUpdates, v.RebootRequired = f.Updates, f.SecurityUpdates, f.RebootRequired
	}
	v.CVECritical, v.CVEHigh = in.Findings[status.SeverityCritical], in.Findings[status.SeverityHigh]
	if len(factsJSON) > 0 {
		var f facts.Facts
		if json.Unmarshal(factsJSON, &f) == nil {
			v.OSID = f.OS.ID
			v.CPUModel, v.CPUCores = f.CPU.Model, f.CPU.Cores
			const mb = 1 << 20
			v.MemTotalMB = f.Memory.TotalBytes / mb
			if f.Memory.TotalBytes >= f.Memory.AvailableBytes {
				v.MemUsedMB = (f.Memory.TotalBytes - f.Memory.AvailableBytes) / mb
			}
			for _, fs := range f.Filesystems {
				if fs.Network {
					continue
				}
				v.DiskTotalMB += fs.SizeBytes / mb
				v.DiskUsedMB += fs.UsedBytes / mb
			}
			if v.DiskTotalMB > 0 {
				v.DiskUsagePercent = float64(int(float64(v.DiskUsedMB)/float64(v.DiskTotalMB)*1000+0.5)) / 10
			}
			for _, a := range f.Addresses {
				if a.Scope == "host" || a.Address == "" {
					continue
				}
				v.IPAddresses = append(v.IPAddresses, a.Address)
			}
		}
	}
	return v
}
