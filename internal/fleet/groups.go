package fleet

import (
	"context"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// ListGroups returns the groups visible to p (a manager: its own groups).
func (s *Service) ListGroups(ctx context.Context, p *domain.Principal) ([]domain.Group, error) {
	return s.store.ListGroups(ctx, store.ScopeOf(p))
}

// GetGroup returns a visible group.
func (s *Service) GetGroup(ctx context.Context, p *domain.Principal, id string) (domain.Group, error) {
	return s.store.GetGroup(ctx, store.ScopeOf(p), id)
}

// CreateGroup creates a group.
func (s *Service) CreateGroup(ctx context.Context, g domain.Group) (domain.Group, error) {
	g.Name = strings.TrimSpace(g.Name)
	if err := validGroup(&g.Name, &g.Description, &g.Segment); err != nil {
		return domain.Group{}, err
	}
	return s.store.CreateGroup(ctx, g)
}

// UpdateGroup changes a group's name, description or segment.
func (s *Service) UpdateGroup(ctx context.Context, id string, set store.GroupSettings) (domain.Group, error) {
	if set.Name != nil {
		n := strings.TrimSpace(*set.Name)
		set.Name = &n
	}
	if err := validGroup(set.Name, set.Description, set.Segment); err != nil {
		return domain.Group{}, err
	}
	return s.store.UpdateGroup(ctx, id, set)
}

func validGroup(name, desc, segment *string) error {
	if name != nil && (*name == "" || len(*name) > 128) {
		return domain.Invalid("invalid_name", "name is required (at most 128 characters)")
	}
	if desc != nil && len(*desc) > 1024 {
		return domain.Invalid("invalid_description", "description is at most 1024 characters")
	}
	if segment != nil && *segment != "" && !domain.ValidSegment(*segment) {
		return domain.Invalid("invalid_segment", "segment may contain letters, digits, - and _ only")
	}
	return nil
}

// DisbandGroup deletes a group; its servers and managers stay.
func (s *Service) DisbandGroup(ctx context.Context, id string) error {
	g, err := s.store.GetGroup(ctx, store.SystemScope, id)
	if err != nil {
		return err
	}
	if err := s.store.DeleteGroup(ctx, id); err != nil {
		return err
	}
	for _, sid := range g.ServerIDs {
		s.membershipChanged(ctx, id, sid, false)
	}
	return nil
}

// MembershipHook is told that a server joined (joined) or left a group,
// after the change is stored.
type MembershipHook func(ctx context.Context, groupID, serverID string, joined bool)

// OnMembership registers a membership hook (while wiring, before use).
func (s *Service) OnMembership(h MembershipHook) { s.membership = append(s.membership, h) }

func (s *Service) membershipChanged(ctx context.Context, groupID, serverID string, joined bool) {
	for _, h := range s.membership {
		h(ctx, groupID, serverID, joined)
	}
}

// AssignServer adds a server to a group.
func (s *Service) AssignServer(ctx context.Context, groupID, serverID string) (domain.Group, error) {
	if serverID == "" {
		return domain.Group{}, domain.Invalid("invalid_request", "server_id is required")
	}
	if err := s.store.AddGroupServer(ctx, groupID, serverID); err != nil {
		return domain.Group{}, err
	}
	s.membershipChanged(ctx, groupID, serverID, true)
	return s.store.GetGroup(ctx, store.SystemScope, groupID)
}

// RemoveServer removes a server from a group.
func (s *Service) RemoveServer(ctx context.Context, groupID, serverID string) (domain.Group, error) {
	if serverID == "" {
		return domain.Group{}, domain.Invalid("invalid_request", "server_id is required")
	}
	if err := s.store.RemoveGroupServer(ctx, groupID, serverID); err != nil {
		return domain.Group{}, err
	}
	s.membershipChanged(ctx, groupID, serverID, false)
	return s.store.GetGroup(ctx, store.SystemScope, groupID)
}

// AssignManager makes a user a manager of a group: it sees the group's
// servers.
func (s *Service) AssignManager(ctx context.Context, groupID, userID string) (domain.Group, error) {
	if userID == "" {
		return domain.Group{}, domain.Invalid("invalid_request", "user_id is required")
	}
	if err := s.store.AddGroupManager(ctx, groupID, userID); err != nil {
		return domain.Group{}, err
	}
	return s.store.GetGroup(ctx, store.SystemScope, groupID)
}

// RemoveManager removes a manager from a group.
func (s *Service) RemoveManager(ctx context.Context, groupID, userID string) (domain.Group, error) {
	if userID == "" {
		return domain.Group{}, domain.Invalid("invalid_request", "user_id is required")
	}
	if err := s.store.RemoveGroupManager(ctx, groupID, userID); err != nil {
		return domain.Group{}, err
	}
	return s.store.GetGroup(ctx, store.SystemScope, groupID)
}
