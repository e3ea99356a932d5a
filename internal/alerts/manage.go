package alerts

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Scoping (docs/alerts.md): alerts:manage is an admin permission by
// default. A holder who is not an admin is scoped like a manager: it sees
// and changes only rules whose groups are all groups it manages (never
// all-servers or fleet-wide rules), and only history of servers in those
// groups.

func ruleOf(r store.AlertRule) (Rule, error) {
	p, err := DecodeParams(r.Params)
	if err != nil {
		return Rule{}, err
	}
	return Rule{ID: r.ID, Name: r.Name, Type: r.Type, Enabled: r.Enabled, Severity: r.Severity, AllServers: r.AllServers,
		GroupIDs: r.GroupIDs, ChannelIDs: r.ChannelIDs, Params: p, CooldownMinutes: r.CooldownMinutes,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

func (s *Service) managed(ctx context.Context, p *domain.Principal) ([]string, bool, error) {
	if p == nil {
		return nil, false, domain.Forbidden("no principal")
	}
	if p.IsAdmin() {
		return nil, true, nil
	}
	ids, err := s.store.ManagedGroupIDs(ctx, p.UserID)
	return ids, false, err
}

func visible(r Rule, groups []string, all bool) bool {
	if all {
		return true
	}
	if r.AllServers || len(r.GroupIDs) == 0 {
		return false
	}
	for _, g := range r.GroupIDs {
		if !slices.Contains(groups, g) {
			return false
		}
	}
	return true
}

// ListRules returns the rules visible to p.
func (s *Service) ListRules(ctx context.Context, p *domain.Principal) ([]Rule, error) {
	groups, all, err := s.managed(ctx, p)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListAlertRules(ctx)
	if err != nil {
		return nil, err
	}
	out := []Rule{}
	for _, row := range rows {
		r, err := ruleOf(row)
		if err != nil {
			return nil, err
		}
		if visible(r, groups, all) {
			out = append(out, r)
		}
	}
	return out, nil
}

// RuleInput creates or changes a rule; nil fields keep the stored value.
type RuleInput struct {
	Name            *string
	Type            *string
	Enabled         *bool
	Severity        *string
	AllServers      *bool
	GroupIDs        *[]string
	ChannelIDs      *[]string
	Params          *Params
	CooldownMinutes *int
}

func (in RuleInput) apply(r *Rule) {
	if in.Name != nil {
		r.Name = *in.Name
	}
	if in.Type != nil {
		r.Type = *in.Type
	}
	if in.Enabled != nil {
		r.Enabled = *in.Enabled
	}
	if in.Severity != nil {
		r.Severity = *in.Severity
	}
	if in.AllServers != nil {
		r.AllServers = *in.AllServers
	}
	if in.GroupIDs != nil {
		r.GroupIDs = *in.GroupIDs
	}
	if in.ChannelIDs != nil {
		r.ChannelIDs = *in.ChannelIDs
	}
	if in.Params != nil {
		r.Params = *in.Params
	}
	if in.CooldownMinutes != nil {
		r.CooldownMinutes = *in.CooldownMinutes
	}
}

func (s *Service) checkRefs(ctx context.Context, r Rule, groups []string, all bool) error {
	if !visible(r, groups, all) {
		return domain.Forbidden("you may only manage rules scoped to groups you manage")
	}
	chans, err := s.store.ListChannels(ctx)
	if err != nil {
		return err
	}
	for _, id := range r.ChannelIDs {
		if !slices.ContainsFunc(chans, func(c store.NotificationChannel) bool { return c.ID == id }) {
			return domain.Invalid("unknown_channel", "channel "+id+" does not exist")
		}
	}
	if len(r.GroupIDs) > 0 {
		gs, err := s.store.ListGroups(ctx, store.SystemScope)
		if err != nil {
			return err
		}
		for _, id := range r.GroupIDs {
			if !slices.ContainsFunc(gs, func(g domain.Group) bool { return g.ID == id }) {
				return domain.Invalid("unknown_group", "group "+id+" does not exist")
			}
		}
	}
	return nil
}

func (s *Service) saveRule(ctx context.Context, r Rule, createdBy string) (Rule, error) {
	params, err := json.Marshal(r.Params)
	if err != nil {
		return Rule{}, err
	}
	row, err := s.store.SaveAlertRule(ctx, store.AlertRule{ID: r.ID, Name: r.Name, Type: r.Type, Enabled: r.Enabled, Severity: r.Severity,
		AllServers: r.AllServers, GroupIDs: r.GroupIDs, ChannelIDs: r.ChannelIDs, Params: params, CooldownMinutes: r.CooldownMinutes,
		CreatedBy: createdBy, CreatedAt: r.CreatedAt})
	if err != nil {
		return Rule{}, err
	}
	return ruleOf(row)
}

// CreateRule stores a new rule (enabled unless said otherwise).
func (s *Service) CreateRule(ctx context.Context, p *domain.Principal, in RuleInput) (Rule, error) {
	groups, all, err := s.managed(ctx, p)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Enabled: true}
	in.apply(&r)
	if err := r.Normalize(); err != nil {
		return Rule{}, err
	}
	if err := s.checkRefs(ctx, r, groups, all); err != nil {
		return Rule{}, err
	}
	out, err := s.saveRule(ctx, r, p.UserID)
	if err == nil {
		s.Trigger()
	}
	return out, err
}

func (s *Service) visibleRule(ctx context.Context, p *domain.Principal, id string) (Rule, []string, bool, error) {
	groups, all, err := s.managed(ctx, p)
	if err != nil {
		return Rule{}, nil, false, err
	}
	row, err := s.store.GetAlertRule(ctx, id)
	if err != nil {
		return Rule{}, nil, false, err
	}
	r, err := ruleOf(row)
	if err != nil {
		return Rule{}, nil, false, err
	}
	if !visible(r, groups, all) {
		return Rule{}, nil, false, domain.NotFound("alert rule")
	}
	return r, groups, all, nil
}

// UpdateRule changes a rule; its type stays.
func (s *Service) UpdateRule(ctx context.Context, p *domain.Principal, id string, in RuleInput) (Rule, error) {
	r, groups, all, err := s.visibleRule(ctx, p, id)
	if err != nil {
		return Rule{}, err
	}
	if in.Type != nil && *in.Type != r.Type {
		return Rule{}, domain.Invalid("type_immutable", "a rule's type cannot change; create a new rule")
	}
	in.apply(&r)
	if err := r.Normalize(); err != nil {
		return Rule{}, err
	}
	if err := s.checkRefs(ctx, r, groups, all); err != nil {
		return Rule{}, err
	}
	out, err := s.saveRule(ctx, r, "")
	if err == nil {
		s.Trigger()
	}
	return out, err
}

// DeleteRule removes a rule (its open alerts close silently; history stays).
func (s *Service) DeleteRule(ctx context.Context, p *domain.Principal, id string) (Rule, error) {
	r, _, _, err := s.visibleRule(ctx, p, id)
	if err != nil {
		return Rule{}, err
	}
	return r, s.store.DeleteAlertRule(ctx, id)
}

// EventFilter narrows the history.
type EventFilter = store.AlertEventFilter

// Events returns the alert history visible to p, newest first.
func (s *Service) Events(ctx context.Context, p *domain.Principal, f EventFilter) ([]store.AlertEvent, error) {
	groups, all, err := s.managed(ctx, p)
	if err != nil {
		return nil, err
	}
	if !all {
		members, err := s.store.GroupServerIDs(ctx)
		if err != nil {
			return nil, err
		}
		f.ServerIDs = []string{}
		for id, gs := range members {
			for _, g := range gs {
				if slices.Contains(groups, g) {
					f.ServerIDs = append(f.ServerIDs, id)
					break
				}
			}
		}
		// The empty subject never occurs: fleet-wide events ("fleet") stay hidden.
	}
	return s.store.ListAlertEvents(ctx, f)
}
