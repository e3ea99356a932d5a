package linuxusers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Resolution is a user's effective profile on one server and where it
// comes from.
type Resolution struct {
	Profile domain.PrivilegeProfile
	// OK is false when the user is not assigned to the server at all.
	OK bool
	// Via is "server" for a direct assignment, "group" for a group's.
	Via string
	// GroupID and GroupName name the group whose assignment won.
	GroupID, GroupName string
	// Warning is set when two of the server's groups assign the user with
	// the same priority: the older group won the tie.
	Warning string
}

// groupRank orders the groups of a server for a user's assignments: the
// lower priority wins (1–9999, default 100), a tie goes to the older
// group (and is warned about), then the id keeps the order total.
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

// groupRanks caches group ranks for one resolution pass (a sync plan or a
// user's server list): groups are few and read once each.
type groupRanks map[string]groupRank

func (s *Service) rankOf(ctx context.Context, cache groupRanks, id string) (groupRank, error) {
	if r, ok := cache[id]; ok {
		return r, nil
	}
	g, err := s.store.GetGroup(ctx, store.SystemScope, id)
	if err != nil {
		return groupRank{}, err
	}
	ga, err := s.store.GroupAutomation(ctx, id)
	if err != nil {
		return groupRank{}, err
	}
	r := groupRank{id: id, name: g.Name, prio: ga.Priority, created: g.CreatedAt}
	cache[id] = r
	return r, nil
}

// EffectiveProfile resolves the profile of user on server: a direct server
// assignment's profile wins; else the assignment of the server's group
// with the lowest priority number (ties: the older group, with a
// warning); a missing profile means the user's default, then standard. ok
// is false when the user is not assigned to the server at all.
func (s *Service) EffectiveProfile(ctx context.Context, u domain.LinuxUser, srv domain.Server, assignments []domain.LinuxUserAssignment) (domain.PrivilegeProfile, bool, error) {
	r, err := s.resolve(ctx, u, srv, assignments, groupRanks{})
	return r.Profile, r.OK, err
}

// resolve is EffectiveProfile with where the profile comes from.
func (s *Service) resolve(ctx context.Context, u domain.LinuxUser, srv domain.Server, assignments []domain.LinuxUserAssignment, cache groupRanks) (Resolution, error) {
	inGroup := map[string]bool{}
	for _, g := range srv.GroupIDs {
		inGroup[g] = true
	}
	var direct *domain.LinuxUserAssignment
	var viaGroups []domain.LinuxUserAssignment
	for i, a := range assignments {
		if a.UserID != u.ID {
			continue
		}
		switch {
		case a.TargetType == domain.TargetServer && a.TargetID == srv.ID:
			direct = &assignments[i]
		case a.TargetType == domain.TargetGroup && inGroup[a.TargetID]:
			viaGroups = append(viaGroups, a)
		}
	}
	if direct == nil && len(viaGroups) == 0 {
		return Resolution{}, nil
	}
	profileOf := func(id string) (domain.PrivilegeProfile, error) {
		if id == "" {
			id = u.DefaultProfileID
		}
		if id == "" {
			return s.store.GetProfileBySlug(ctx, SlugStandard)
		}
		return s.store.GetProfile(ctx, id)
	}
	if direct != nil {
		p, err := profileOf(direct.ProfileID)
		return Resolution{Profile: p, OK: true, Via: domain.TargetServer}, err
	}
	type ranked struct {
		a domain.LinuxUserAssignment
		r groupRank
	}
	var rs []ranked
	for _, a := range viaGroups {
		r, err := s.rankOf(ctx, cache, a.TargetID)
		if errors.Is(err, domain.ErrNotFound) {
			continue // the group is gone; its assignment goes with it
		}
		if err != nil {
			return Resolution{}, err
		}
		rs = append(rs, ranked{a, r})
	}
	if len(rs) == 0 {
		return Resolution{}, nil
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].r.before(rs[j].r) })
	win := rs[0]
	p, err := profileOf(win.a.ProfileID)
	if err != nil {
		return Resolution{}, err
	}
	res := Resolution{Profile: p, OK: true, Via: domain.TargetGroup, GroupID: win.r.id, GroupName: win.r.name}
	if len(rs) > 1 && rs[1].r.prio == win.r.prio {
		res.Warning = fmt.Sprintf("groups %q and %q both assign %s with priority %d: the older group %q wins; give them different priorities",
			win.r.name, rs[1].r.name, u.Username, win.r.prio, win.r.name)
	}
	return res, nil
}

// UserServer is a user's effective profile on one server and the state of
// the account there.
type UserServer struct {
	ServerID    string `json:"server_id"`
	ServerName  string `json:"server_name"`
	ProfileID   string `json:"profile_id"`
	ProfileName string `json:"profile_name"`
	// Via is "server" for a direct assignment, "group" for a group's
	// (GroupID and GroupName name the group whose assignment won).
	Via       string `json:"via"`
	GroupID   string `json:"group_id,omitempty"`
	GroupName string `json:"group_name,omitempty"`
	// Warning: two groups of the server assign the user with the same
	// priority (the older group won).
	Warning string `json:"warning,omitempty"`
	State   string `json:"state"` // a provision state, or "pending" before the first sync
}
