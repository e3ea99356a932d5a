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
	return s.store.DeleteGroup(ctx, id)
}

// AssignServer adds a server to a group.
func (s *Service) AssignServer(ctx context.Context, groupID, serverID string) (domain.Group, error) {
	if err := s.store.AddGroupServer(ctx, groupID, serverID); err != nil {
		return domain.Group{}, err
	}
	return s.store.GetGroup(ctx, store.SystemScope, groupID)
}

// RemoveServer removes a server from a group.
func (s *Service) RemoveServer(ctx context.Context, groupID, serverID string) (domain.Group, error) {
	if err := s.store.RemoveGroupServer(ctx, groupID, serverID); err != nil {
		return domain.Group{}, err
	}
	return s.store.GetGroup(ctx, store.SystemScope, groupID)
}

// AssignManager makes a user a manager of a group: it sees the group's
// servers.
func (s *Service) AssignManager(ctx context.Context, groupID, userID string) (domain.Group, error) {
	if err := s.store.AddGroupManager(ctx, groupID, userID); err != nil {
		return domain.Group{}, err
	}
	return s.store.GetGroup(ctx, store.SystemScope, groupID)
}

// RemoveManager removes a manager from a group.
func (s *Service) RemoveManager(ctx context.Context, groupID, userID string) (domain.Group, error) {
	if err := s.store.RemoveGroupManager(ctx, groupID, userID); err != nil {
		return domain.Group{}, err
	}
	return s.store.GetGroup(ctx, store.SystemScope, groupID)
}
