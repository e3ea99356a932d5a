package automation

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// maxMaintenance bounds an end time: a year ahead.
const maxMaintenance = 366 * 24 * time.Hour

// Maintenance returns a visible server's maintenance mode (nil: off; an
// end time that passed counts as off).
func (s *Service) Maintenance(ctx context.Context, p *domain.Principal, serverID string) (*domain.Maintenance, error) {
	if _, err := s.visibleServer(ctx, p, serverID); err != nil {
		return nil, err
	}
	m, ok, err := s.o.Store.GetMaintenance(ctx, serverID)
	if err != nil || !ok || (m.EndsAt != nil && !m.EndsAt.After(s.now())) {
		return nil, err
	}
	return &m, nil
}

func (s *Service) visibleServer(ctx context.Context, p *domain.Principal, id string) (domain.Server, error) {
	if id == "" || len(id) > 36 {
		return domain.Server{}, domain.NotFound("server")
	}
	return s.o.Store.GetServer(ctx, store.ScopeOf(p), id)
}

// StartMaintenance puts a visible server in maintenance: no scheduled
// rules run on it until it ends (by hand, or at endsAt).
func (s *Service) StartMaintenance(ctx context.Context, p *domain.Principal, serverID, reason string, endsAt *time.Time) (domain.Maintenance, error) {
	if _, err := s.visibleServer(ctx, p, serverID); err != nil {
		return domain.Maintenance{}, err
	}
	reason = strings.TrimSpace(reason)
	if len(reason) > 1024 || strings.ContainsRune(reason, 0) {
		return domain.Maintenance{}, domain.Invalid("invalid_reason", "reason is at most 1024 characters")
	}
	now := s.now()
	if endsAt != nil {
		e := endsAt.UTC()
		if !e.After(now) || e.Sub(now) > maxMaintenance {
			return domain.Maintenance{}, domain.Invalid("invalid_ends_at", "ends_at must lie in the future, at most a year ahead")
		}
		endsAt = &e
	}
	m := domain.Maintenance{ServerID: serverID, Reason: reason, StartedAt: now, EndsAt: endsAt}
	if p != nil {
		m.StartedBy = p.Username
	}
	return m, s.o.Store.StartMaintenance(ctx, m)
}

// EndMaintenance ends a visible server's maintenance; ended reports
// whether it was on.
func (s *Service) EndMaintenance(ctx context.Context, p *domain.Principal, serverID string) (bool, error) {
	if _, err := s.visibleServer(ctx, p, serverID); err != nil {
		return false, err
	}
	return s.o.Store.EndMaintenance(ctx, serverID)
}

// endExpiredMaintenance ends the maintenance modes whose end time passed,
// each with an audit entry by the system.
func (s *Service) endExpiredMaintenance(ctx context.Context, now time.Time) error {
	list, err := s.o.Store.ExpiredMaintenance(ctx, now)
	if err != nil {
		return err
	}
	for _, m := range list {
		ok, err := s.o.Store.EndMaintenance(ctx, m.ServerID)
		if err != nil {
			return err
		}
		if ok {
			s.audit(ctx, nil, "server.maintenance.end", "server:"+m.ServerID, map[string]any{"automatic": true, "ends_at": m.EndsAt})
		}
	}
	return nil
}

// InMaintenance reports which servers are in maintenance now (for the
// scans and alerts that skip them).
func (s *Service) InMaintenance(ctx context.Context, serverIDs []string) (map[string]bool, error) {
	return s.o.Store.InMaintenance(ctx, serverIDs, s.now())
}

// groupRank is what orders groups for a rule conflict.
type groupRank struct {
	id, name string
	prio     int
	created  time.Time
}

func (a groupRank) before(b groupRank) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	return a.id < b.id
}

func (s *Service) rank(ctx context.Context, cache map[string]groupRank, id string) (groupRank, error) {
	if r, ok := cache[id]; ok {
		return r, nil
	}
	g, err := s.o.Store.GetGroup(ctx, store.SystemScope, id)
	if err != nil {
		return groupRank{}, err
	}
	ga, err := s.o.Store.GroupAutomation(ctx, id)
	if err != nil {
		return groupRank{}, err
	}
	r := groupRank{id: id, name: g.Name, prio: ga.Priority, created: g.CreatedAt}
	cache[id] = r
	return r, nil
}

// groupsWithRule returns the groups among ids with an enabled rule of
// type in an enabled schedule.
func (s *Service) groupsWithRule(ctx context.Context, ids []string, ruleType string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, g := range ids {
		list, err := s.o.Store.ListSchedules(ctx, store.SystemScope, g)
		if err != nil {
			return nil, err
		}
		for _, sch := range list {
			for _, r := range sch.Rules {
				if sch.Enabled && r.Enabled && r.Type == ruleType {
					out[g] = true
				}
			}
		}
	}
	return out, nil
}

// superseded returns, per server of groupID, why a rule of ruleType of
// that group does not run there: another group of the server with the
// same rule type ranks first (lower priority; ties: the older group).
func (s *Service) superseded(ctx context.Context, groupID, ruleType string, serverIDs []string) (map[string]string, error) {
	member, err := s.o.Store.ServerGroupIDs(ctx, serverIDs)
	if err != nil {
		return nil, err
	}
	others := map[string]bool{}
	for _, gs := range member {
		for _, g := range gs {
			if g != groupID {
				others[g] = true
			}
		}
	}
	if len(others) == 0 {
		return map[string]string{}, nil
	}
	var oids []string
	for g := range others {
		oids = append(oids, g)
	}
	has, err := s.groupsWithRule(ctx, oids, ruleType)
	if err != nil {
		return nil, err
	}
	cache := map[string]groupRank{}
	me, err := s.rank(ctx, cache, groupID)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for sid, gs := range member {
		for _, g := range gs {
			if g == groupID || !has[g] {
				continue
			}
			o, err := s.rank(ctx, cache, g)
			if errors.Is(err, domain.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, err
			}
			if o.before(me) {
				out[sid] = fmt.Sprintf("superseded by the %s rule of group %q (priority %d; this group's is %d)", ruleType, o.name, o.prio, me.prio)
			}
		}
	}
	return out, nil
}

// Conflict is a rule type that several groups of a server schedule: the
// winner runs it, the others are superseded. Tie is set when the winner
// won on age, not priority (a warning for the health report).
type Conflict struct {
	RuleType   string
	Winner     string // group name
	WinnerID   string
	Superseded []string // group names
	Tie        bool
	Warning    string
}

// Conflicts returns a visible server's rule conflicts between its groups.
func (s *Service) Conflicts(ctx context.Context, p *domain.Principal, serverID string) ([]Conflict, error) {
	if _, err := s.visibleServer(ctx, p, serverID); err != nil {
		return nil, err
	}
	member, err := s.o.Store.ServerGroupIDs(ctx, []string{serverID})
	if err != nil {
		return nil, err
	}
	gs := member[serverID]
	cache := map[string]groupRank{}
	var out []Conflict
	for _, t := range RuleTypes {
		has, err := s.groupsWithRule(ctx, gs, t)
		if err != nil {
			return nil, err
		}
		if len(has) < 2 {
			continue
		}
		var ranks []groupRank
		for g := range has {
			r, err := s.rank(ctx, cache, g)
			if err != nil {
				return nil, err
			}
			ranks = append(ranks, r)
		}
		sort.Slice(ranks, func(i, j int) bool { return ranks[i].before(ranks[j]) })
		c := Conflict{RuleType: t, Winner: ranks[0].name, WinnerID: ranks[0].id, Tie: ranks[0].prio == ranks[1].prio}
		for _, r := range ranks[1:] {
			c.Superseded = append(c.Superseded, r.name)
		}
		if c.Tie {
			c.Warning = fmt.Sprintf("groups %q and %q both schedule %s with priority %d: the older group %q wins; give them different priorities",
				ranks[0].name, ranks[1].name, t, ranks[0].prio, ranks[0].name)
		}
		out = append(out, c)
	}
	return out, nil
}

// TieWarnings returns, per server, a warning for every rule type that two
// or more of its groups schedule with the same priority (the older group
// wins the tie): the status area shows them in the server's health
// report. Groups are few, so their schedules and ranks are read once.
func (s *Service) TieWarnings(ctx context.Context, serverIDs []string) (map[string][]string, error) {
	member, err := s.o.Store.ServerGroupIDs(ctx, serverIDs)
	if err != nil {
		return nil, err
	}
	types := map[string]map[string]bool{} // group → rule types it schedules
	cache := map[string]groupRank{}
	out := map[string][]string{}
	for sid, gs := range member {
		if len(gs) < 2 {
			continue
		}
		byType := map[string][]groupRank{}
		for _, g := range gs {
			ts, ok := types[g]
			if !ok {
				ts = map[string]bool{}
				list, err := s.o.Store.ListSchedules(ctx, store.SystemScope, g)
				if err != nil {
					return nil, err
				}
				for _, sch := range list {
					for _, r := range sch.Rules {
						if sch.Enabled && r.Enabled {
							ts[r.Type] = true
						}
					}
				}
				types[g] = ts
			}
			if len(ts) == 0 {
				continue
			}
			r, err := s.rank(ctx, cache, g)
			if errors.Is(err, domain.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, err
			}
			for t := range ts {
				byType[t] = append(byType[t], r)
			}
		}
		for _, t := range RuleTypes {
			ranks := byType[t]
			if len(ranks) < 2 {
				continue
			}
			sort.Slice(ranks, func(i, j int) bool { return ranks[i].before(ranks[j]) })
			if ranks[0].prio == ranks[1].prio {
				out[sid] = append(out[sid], fmt.Sprintf("Groups %q and %q both schedule %s with priority %d: the older group %q wins; give them different priorities.",
					ranks[0].name, ranks[1].name, t, ranks[0].prio, ranks[0].name))
			}
		}
	}
	return out, nil
}
