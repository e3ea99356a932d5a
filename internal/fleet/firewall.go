package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/firewall"
	"github.com/lcmproject/lcm/internal/store"
)

// Limits of the IP allowlists. Each says why.
const (
	// maxAllowlistEntries: each entry becomes one firewall rule per port;
	// a few dozen offices and VPN ranges is the real use.
	maxAllowlistEntries = 256
	maxAllowlistName    = 64
	maxAllowlistDesc    = 512
)

// FirewallRuleInput is a rule as the API takes it: a source address or
// CIDR, or a named IP allowlist (one rule per entry), not both.
type FirewallRuleInput struct {
	firewall.Rule
	AllowlistID string
}

// registerFirewall registers the finish hooks of the firewall jobs.
func (s *Service) registerFirewall() {
	s.jobs.OnFinish(domain.JobFirewall, s.afterFirewallJob)
	s.jobs.OnFinish(domain.JobListeningPortScan, s.afterPortsJob)
}

// Firewall submits a firewall operation on a visible server: status,
// enable, disable, add or remove (rules). Allowlists are resolved into
// their addresses here, so the job carries plain rules.
func (s *Service) Firewall(ctx context.Context, p *domain.Principal, id, op string, in []FirewallRuleInput) (domain.Job, error) {
	switch op {
	case domain.FirewallStatus, domain.FirewallEnable, domain.FirewallDisable:
		if len(in) > 0 {
			return domain.Job{}, domain.Invalid("rules_not_allowed", fmt.Sprintf("op %q takes no rules", op))
		}
	case domain.FirewallAdd, domain.FirewallRemove:
		if len(in) == 0 {
			return domain.Job{}, domain.Invalid("rules_required", fmt.Sprintf("op %q needs at least one rule", op))
		}
	default:
		return domain.Job{}, domain.Invalid("invalid_op", `op must be "status", "enable", "disable", "add" or "remove"`)
	}
	if _, err := s.store.GetServer(ctx, store.ScopeOf(p), id); err != nil {
		return domain.Job{}, err
	}
	rules, err := s.resolveRules(ctx, in)
	if err != nil {
		return domain.Job{}, err
	}
	return s.jobs.Submit(ctx, p, id, domain.JobFirewall, actions.FirewallParams{Op: op, Rules: rules})
}

func (s *Service) resolveRules(ctx context.Context, in []FirewallRuleInput) ([]firewall.Rule, error) {
	var out []firewall.Rule
	for i, r := range in {
		base := r.Rule
		if r.AllowlistID != "" && base.Source != "" {
			return nil, domain.Invalid("invalid_rule", fmt.Sprintf("rule %d: give source or allowlist_id, not both", i+1))
		}
		sources := []string{base.Source}
		if r.AllowlistID != "" {
			a, err := s.store.GetIPAllowlist(ctx, r.AllowlistID)
			if err != nil {
				return nil, domain.Invalid("unknown_allowlist", fmt.Sprintf("rule %d: no IP allowlist %q", i+1, r.AllowlistID))
			}
			sources = a.Entries
			if base.Comment == "" {
				base.Comment = "allowlist " + a.Name
				if len(base.Comment) > firewall.MaxComment {
					base.Comment = base.Comment[:firewall.MaxComment]
				}
			}
		}
		for _, src := range sources {
			x := base
			x.Source = src
			if err := x.Validate(); err != nil {
				return nil, domain.Invalid("invalid_rule", fmt.Sprintf("rule %d: %v", i+1, err))
			}
			out = append(out, x)
		}
		if len(out) > firewall.MaxRules {
			return nil, domain.Invalid("too_many_rules", fmt.Sprintf("at most %d rules at once", firewall.MaxRules))
		}
	}
	return out, nil
}

// ScanListeningPorts submits a listening-ports scan of a visible server.
func (s *Service) ScanListeningPorts(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	return s.jobs.Submit(ctx, p, id, domain.JobListeningPortScan, nil)
}

// GetFirewall returns the last read-back firewall and ports of a visible
// server.
func (s *Service) GetFirewall(ctx context.Context, p *domain.Principal, id string) (domain.FirewallState, error) {
	return s.store.GetFirewall(ctx, store.ScopeOf(p), id)
}

func finishedAt(job domain.Job) time.Time {
	if job.FinishedAt != nil {
		return *job.FinishedAt
	}
	return time.Now().UTC()
}

// afterFirewallJob stores what a firewall job read back — also when it
// failed (a rollback that read the firewall off is a proven state).
func (s *Service) afterFirewallJob(ctx context.Context, job domain.Job) error {
	var res actions.Result
	if len(job.Result) == 0 || json.Unmarshal(job.Result, &res) != nil || res.Firewall == nil || !res.Firewall.Proven {
		return nil
	}
	rules, _ := json.Marshal(orEmptyRules(res.Firewall.Rules))
	return s.store.RecordFirewall(ctx, job.ServerID, res.Firewall.Tool, res.Firewall.Active, rules, finishedAt(job))
}

// afterPortsJob stores a scan's sockets and the firewall it read.
func (s *Service) afterPortsJob(ctx context.Context, job domain.Job) error {
	var res actions.Result
	if len(job.Result) == 0 || json.Unmarshal(job.Result, &res) != nil || res.Ports == nil || job.Status != domain.JobSuccess {
		return nil
	}
	at := finishedAt(job)
	if fw := res.Ports.Firewall; fw != nil && fw.Proven {
		rules, _ := json.Marshal(orEmptyRules(fw.Rules))
		if err := s.store.RecordFirewall(ctx, job.ServerID, fw.Tool, fw.Active, rules, at); err != nil {
			return err
		}
	}
	socks := res.Ports.Sockets
	if socks == nil {
		socks = []firewall.Socket{}
	}
	b, _ := json.Marshal(socks)
	return s.store.RecordListening(ctx, job.ServerID, b, at)
}

func orEmptyRules(r []firewall.Rule) []firewall.Rule {
	if r == nil {
		return []firewall.Rule{}
	}
	return r
}

// --- IP allowlists ---------------------------------------------------------

// ListIPAllowlists returns every named IP allowlist.
func (s *Service) ListIPAllowlists(ctx context.Context) ([]domain.IPAllowlist, error) {
	return s.store.ListIPAllowlists(ctx)
}

// CreateIPAllowlist validates and stores a named allowlist: a name, and
// addresses or CIDRs (normalised, duplicates dropped).
func (s *Service) CreateIPAllowlist(ctx context.Context, a domain.IPAllowlist) (domain.IPAllowlist, error) {
	a.Name = strings.TrimSpace(a.Name)
	if err := ValidateAllowlist(&a); err != nil {
		return domain.IPAllowlist{}, err
	}
	return s.store.CreateIPAllowlist(ctx, a)
}

// ValidateAllowlist checks and normalises a in place.
func ValidateAllowlist(a *domain.IPAllowlist) error {
	if a.Name == "" || len(a.Name) > maxAllowlistName || !utf8.ValidString(a.Name) || strings.ContainsAny(a.Name, "\x00\n\r\t") {
		return domain.Invalid("invalid_name", fmt.Sprintf("name must be 1-%d characters of one line", maxAllowlistName))
	}
	if len(a.Description) > maxAllowlistDesc || !utf8.ValidString(a.Description) || strings.ContainsRune(a.Description, 0) {
		return domain.Invalid("invalid_description", fmt.Sprintf("description must be text of at most %d bytes", maxAllowlistDesc))
	}
	if len(a.Entries) == 0 || len(a.Entries) > maxAllowlistEntries {
		return domain.Invalid("invalid_entries", fmt.Sprintf("entries must list 1-%d addresses or CIDRs", maxAllowlistEntries))
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range a.Entries {
		p, err := firewall.ParseSource(e)
		if err != nil {
			return domain.Invalid("invalid_entries", err.Error())
		}
		if k := p.String(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	a.Entries = out
	return nil
}

// DeleteIPAllowlist removes an allowlist.
func (s *Service) DeleteIPAllowlist(ctx context.Context, id string) (domain.IPAllowlist, error) {
	return s.store.DeleteIPAllowlist(ctx, id)
}

// HardeningOverview counts the visible servers by hardening state, in
// total and per group.
func (s *Service) HardeningOverview(ctx context.Context, p *domain.Principal) (store.HardeningCounts, []store.HardeningGroup, error) {
	return s.store.HardeningOverview(ctx, store.ScopeOf(p))
}
