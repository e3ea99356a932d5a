package mcp

import (
	"context"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Paging limits of the list tools.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Service answers the read-only questions. Every method takes the
// principal of the mcp-scoped key and sees exactly what REST shows that
// key's creator: an admin the whole fleet, a manager the servers of its
// groups.
type Service struct {
	st    Store
	cache fleetCache
}

// NewService builds the service over the store.
func NewService(st Store) *Service {
	return &Service{st: st, cache: fleetCache{st: st}}
}

// visible returns the views p may see, sorted by name: everything for an
// admin, for anyone else the servers of the groups they manage (REST's
// scope rule, applied to the cached views' current group ids).
func (s *Service) visible(ctx context.Context, p *domain.Principal) ([]ServerView, error) {
	groups, every, err := s.st.VisibleGroups(ctx, store.ScopeOf(p))
	if err != nil {
		return nil, err
	}
	all, err := s.cache.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if every {
		return all, nil
	}
	var out []ServerView
	if len(groups) == 0 {
		return out, nil
	}
	for _, v := range all {
		for _, g := range v.GroupIDs {
			if groups[g] {
				out = append(out, v)
				break
			}
		}
	}
	return out, nil
}

// ListFilter selects servers in ListServers.
type ListFilter struct {
	Status          string `json:"status,omitempty" jsonschema:"traffic light: excellent, green, yellow, red, unreachable or unknown"`
	GroupID         string `json:"group_id,omitempty" jsonschema:"only servers of this server group (id)"`
	Search          string `json:"search,omitempty" jsonschema:"case-insensitive text in the name, host, OS or an IP address"`
	OutdatedOnly    bool   `json:"outdated_only,omitempty" jsonschema:"only servers with package updates available"`
	CriticalCVEOnly bool   `json:"critical_cve_only,omitempty" jsonschema:"only servers with at least one critical vulnerability"`
	Limit           int    `json:"limit,omitempty" jsonschema:"page size, 1 to 200 (default 50)"`
	Offset          int    `json:"offset,omitempty" jsonschema:"number of matching servers to skip"`
}

// ServerPage is one page of servers.
type ServerPage struct {
	Servers    []ServerView `json:"servers"`
	Total      int          `json:"total"`
	Offset     int          `json:"offset"`
	Limit      int          `json:"limit"`
	NextOffset *int         `json:"next_offset"`
}

func pageBounds(limit, offset int) (int, int, error) {
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return 0, 0, domain.Invalid("invalid_limit", "limit must be between 1 and 200")
	}
	if offset < 0 {
		return 0, 0, domain.Invalid("invalid_offset", "offset must not be negative")
	}
	return limit, offset, nil
}

var validStatus = map[string]bool{"excellent": true, "green": true, "yellow": true, "red": true, "unreachable": true, "unknown": true}

// ListServers pages through the visible servers that match f.
func (s *Service) ListServers(ctx context.Context, p *domain.Principal, f ListFilter) (ServerPage, error) {
	limit, offset, err := pageBounds(f.Limit, f.Offset)
	if err != nil {
		return ServerPage{}, err
	}
	if f.Status != "" && !validStatus[f.Status] {
		return ServerPage{}, domain.Invalid("invalid_status", "status must be excellent, green, yellow, red, unreachable or unknown")
	}
	all, err := s.visible(ctx, p)
	if err != nil {
		return ServerPage{}, err
	}
	q := strings.ToLower(strings.TrimSpace(f.Search))
	page := ServerPage{Servers: []ServerView{}, Offset: offset, Limit: limit}
	for _, v := range all {
		if !matches(v, f, q) {
			continue
		}
		if page.Total >= offset && len(page.Servers) < limit {
			page.Servers = append(page.Servers, v)
		}
		page.Total++
	}
	if next := offset + limit; next < page.Total {
		page.NextOffset = &next
	}
	return page, nil
}

func matches(v ServerView, f ListFilter, q string) bool {
	switch {
	case f.Status != "" && v.Status != f.Status,
		f.OutdatedOnly && v.OutdatedPackages == 0,
		f.CriticalCVEOnly && v.CVECritical == 0:
		return false
	}
	if f.GroupID != "" && !contains(v.GroupIDs, f.GroupID) {
		return false
	}
	if q == "" {
		return true
	}
	for _, t := range append([]string{v.Name, v.Host, v.OSName, v.OSVersion}, v.IPAddresses...) {
		if strings.Contains(strings.ToLower(t), q) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// GetServer returns one visible server by id or by name (exact,
// case-insensitive).
func (s *Service) GetServer(ctx context.Context, p *domain.Principal, id, name string) (ServerView, error) {
	if id == "" && name == "" {
		return ServerView{}, domain.Invalid("missing_server", "give the server's id or name")
	}
	all, err := s.visible(ctx, p)
	if err != nil {
		return ServerView{}, err
	}
	for _, v := range all {
		if (id != "" && v.ID == id) || (id == "" && strings.EqualFold(v.Name, name)) {
			return v, nil
		}
	}
	return ServerView{}, domain.NotFound("server")
}

// Summary is the fleet at a glance.
type Summary struct {
	Total                  int            `json:"total"`
	Reachable              int            `json:"reachable" jsonschema:"servers contacted successfully and not unreachable (a single failed contact still counts as reachable, as in the status model)"`
	Unreachable            int            `json:"unreachable" jsonschema:"servers with two or more failed contacts in a row: the status model's unreachable, equal to by_status.unreachable once the status is computed"`
	NotContacted           int            `json:"not_contacted" jsonschema:"servers never reached yet (neither reachable nor unreachable)"`
	ByStatus               map[string]int `json:"by_status"`
	UpdatesAvailable       int            `json:"updates_available" jsonschema:"servers with at least one package update"`
	SecurityUpdatesPending int            `json:"security_updates_pending" jsonschema:"servers with at least one security update"`
	RebootRequired         int            `json:"reboot_required"`
	ServersWithCriticalCVE int            `json:"servers_with_critical_cve"`
}

// FleetSummary counts the visible fleet.
func (s *Service) FleetSummary(ctx context.Context, p *domain.Principal) (Summary, error) {
	all, err := s.visible(ctx, p)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{ByStatus: map[string]int{"excellent": 0, "green": 0, "yellow": 0, "red": 0, "unreachable": 0, "unknown": 0}}
	for _, v := range all {
		sum.Total++
		switch {
		case v.unreachable:
			sum.Unreachable++
		case v.Reachable:
			sum.Reachable++
		default:
			sum.NotContacted++
		}
		sum.ByStatus[v.Status]++
		if v.OutdatedPackages > 0 {
			sum.UpdatesAvailable++
		}
		if v.SecurityUpdates > 0 {
			sum.SecurityUpdatesPending++
		}
		if v.RebootRequired {
			sum.RebootRequired++
		}
		if v.CVECritical > 0 {
			sum.ServersWithCriticalCVE++
		}
	}
	return sum, nil
}

// VulnFilter selects findings.
type VulnFilter struct {
	Server       string `json:"server,omitempty" jsonschema:"one server, by id or name"`
	Severity     string `json:"severity,omitempty" jsonschema:"critical, high, medium, low or unknown"`
	Package      string `json:"package,omitempty" jsonschema:"package name"`
	CVE          string `json:"cve,omitempty" jsonschema:"advisory or CVE id"`
	FixAvailable bool   `json:"fix_available,omitempty" jsonschema:"only findings with a fixed version"`
	Limit        int    `json:"limit,omitempty" jsonschema:"page size, 1 to 200 (default 50)"`
	Offset       int    `json:"offset,omitempty"`
}

// VulnOut is one finding.
type VulnOut struct {
	ServerID         string `json:"server_id"`
	ServerName       string `json:"server_name"`
	CVE              string `json:"cve"`
	Package          string `json:"package"`
	InstalledVersion string `json:"installed_version"`
	FixedVersion     string `json:"fixed_version"`
	Severity         string `json:"severity"`
}

// VulnPage is one page of findings.
type VulnPage struct {
	Findings   []VulnOut `json:"findings"`
	Total      int64     `json:"total"`
	Offset     int       `json:"offset"`
	Limit      int       `json:"limit"`
	NextOffset *int      `json:"next_offset"`
}

// ListVulnerabilities pages through the findings of visible servers.
func (s *Service) ListVulnerabilities(ctx context.Context, p *domain.Principal, f VulnFilter) (VulnPage, error) {
	limit, offset, err := pageBounds(f.Limit, f.Offset)
	if err != nil {
		return VulnPage{}, err
	}
	all, err := s.visible(ctx, p)
	if err != nil {
		return VulnPage{}, err
	}
	names := make(map[string]string, len(all))
	for _, v := range all {
		names[v.ID] = v.Name
	}
	sf := store.FindingsFilter{Severity: f.Severity, Package: f.Package, CVE: f.CVE, FixOnly: f.FixAvailable, Limit: limit, Offset: offset}
	if f.Server != "" {
		v, err := s.byIDOrName(all, f.Server)
		if err != nil {
			return VulnPage{}, err
		}
		sf.ServerIDs = []string{v.ID}
	}
	rows, total, err := s.st.ListFindings(ctx, store.ScopeOf(p), sf)
	if err != nil {
		return VulnPage{}, err
	}
	page := VulnPage{Findings: make([]VulnOut, 0, len(rows)), Total: total, Offset: offset, Limit: limit}
	for _, r := range rows {
		page.Findings = append(page.Findings, VulnOut{ServerID: r.ServerID, ServerName: names[r.ServerID], CVE: r.CVE,
			Package: r.Package, InstalledVersion: r.Version, FixedVersion: r.FixedIn, Severity: r.Severity})
	}
	if next := offset + limit; int64(next) < total {
		page.NextOffset = &next
	}
	return page, nil
}

func (s *Service) byIDOrName(all []ServerView, key string) (ServerView, error) {
	for _, v := range all {
		if v.ID == key {
			return v, nil
		}
	}
	for _, v := range all {
		if strings.EqualFold(v.Name, key) {
			return v, nil
		}
	}
	return ServerView{}, domain.NotFound("server")
}

// OutdatedFilter selects servers in ListOutdatedPackages.
type OutdatedFilter struct {
	Server       string `json:"server,omitempty" jsonschema:"one server, by id or name"`
	SecurityOnly bool   `json:"security_only,omitempty" jsonschema:"only security updates"`
	Limit        int    `json:"limit,omitempty" jsonschema:"servers per page, 1 to 50 (default 20)"`
	Offset       int    `json:"offset,omitempty"`
}

// OutdatedPackage is one pending update.
type OutdatedPackage struct {
	Name      string `json:"name"`
	Arch      string `json:"arch"`
	Installed string `json:"installed_version"`
	Candidate string `json:"candidate_version"`
	Security  bool   `json:"security"`
	Held      bool   `json:"held"`
}

// ServerOutdated is one server's pending updates.
type ServerOutdated struct {
	ServerID   string            `json:"server_id"`
	ServerName string            `json:"server_name"`
	Packages   []OutdatedPackage `json:"packages"`
}

// OutdatedPage is a page of servers with pending updates.
type OutdatedPage struct {
	Servers    []ServerOutdated `json:"servers"`
	Total      int              `json:"total" jsonschema:"servers with matching updates"`
	Offset     int              `json:"offset"`
	Limit      int              `json:"limit"`
	NextOffset *int             `json:"next_offset"`
}

// ListOutdatedPackages lists the pending updates of visible servers that
// have any (or of one server).
func (s *Service) ListOutdatedPackages(ctx context.Context, p *domain.Principal, f OutdatedFilter) (OutdatedPage, error) {
	if f.Limit == 0 {
		f.Limit = 20
	}
	if f.Limit < 1 || f.Limit > 50 {
		return OutdatedPage{}, domain.Invalid("invalid_limit", "limit must be between 1 and 50")
	}
	if f.Offset < 0 {
		return OutdatedPage{}, domain.Invalid("invalid_offset", "offset must not be negative")
	}
	all, err := s.visible(ctx, p)
	if err != nil {
		return OutdatedPage{}, err
	}
	var cands []ServerView
	if f.Server != "" {
		v, err := s.byIDOrName(all, f.Server)
		if err != nil {
			return OutdatedPage{}, err
		}
		cands = []ServerView{v}
	} else {
		for _, v := range all {
			if (f.SecurityOnly && v.SecurityUpdates > 0) || (!f.SecurityOnly && v.OutdatedPackages > 0) {
				cands = append(cands, v)
			}
		}
	}
	page := OutdatedPage{Servers: []ServerOutdated{}, Total: len(cands), Offset: f.Offset, Limit: f.Limit}
	sc := store.ScopeOf(p)
	for i := f.Offset; i < len(cands) && len(page.Servers) < f.Limit; i++ {
		v := cands[i]
		recs, err := s.st.ServerOutdated(ctx, sc, v.ID)
		if err != nil {
			return OutdatedPage{}, err
		}
		so := ServerOutdated{ServerID: v.ID, ServerName: v.Name, Packages: []OutdatedPackage{}}
		for _, r := range recs {
			if f.SecurityOnly && !r.Security {
				continue
			}
			so.Packages = append(so.Packages, OutdatedPackage{Name: r.Name, Arch: r.Arch, Installed: r.Current, Candidate: r.Candidate, Security: r.Security, Held: r.Held})
		}
		page.Servers = append(page.Servers, so)
	}
	if next := f.Offset + f.Limit; next < page.Total {
		page.NextOffset = &next
	}
	return page, nil
}
