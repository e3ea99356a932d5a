package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/domain"
)

// GroupSettings are a group's changeable fields; nil fields stay.
type GroupSettings struct {
	Name        *string
	Description *string
	Segment     *string
}

// CreateGroup stores a new group.
func (s *Store) CreateGroup(ctx context.Context, g domain.Group) (domain.Group, error) {
	row := groupRow{ID: uuid.NewString(), Name: g.Name, Description: g.Description, Segment: g.Segment, CreatedAt: time.Now().UTC()}
	if err := mapErr(s.conn(ctx).Create(&row).Error, "group "+g.Name); err != nil {
		return domain.Group{}, err
	}
	return s.GetGroup(ctx, SystemScope, row.ID)
}

// GetGroup returns a group visible in sc (a manager sees the groups it
// manages).
func (s *Store) GetGroup(ctx context.Context, sc Scope, id string) (domain.Group, error) {
	var row groupRow
	q := applyGroupScope(s.conn(ctx).Model(&groupRow{}), "id", sc)
	if err := q.Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Group{}, mapErr(err, "group")
	}
	out, err := s.decorateGroups(ctx, []groupRow{row})
	if err != nil {
		return domain.Group{}, err
	}
	return out[0], nil
}

// ListGroups returns the groups visible in sc, by name.
func (s *Store) ListGroups(ctx context.Context, sc Scope) ([]domain.Group, error) {
	var rows []groupRow
	if err := applyGroupScope(s.conn(ctx).Model(&groupRow{}), "id", sc).Order("name").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "groups")
	}
	return s.decorateGroups(ctx, rows)
}

func (s *Store) decorateGroups(ctx context.Context, rows []groupRow) ([]domain.Group, error) {
	out := make([]domain.Group, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var srv []groupServerRow
	if err := s.conn(ctx).Select("group_id", "server_id").Where("group_id IN ?", ids).Order("server_id").Find(&srv).Error; err != nil {
		return nil, mapErr(err, "group servers")
	}
	var mgr []groupManagerRow
	if err := s.conn(ctx).Select("group_id", "user_id").Where("group_id IN ?", ids).Order("user_id").Find(&mgr).Error; err != nil {
		return nil, mapErr(err, "group managers")
	}
	servers, managers := map[string][]string{}, map[string][]string{}
	for _, l := range srv {
		servers[l.GroupID] = append(servers[l.GroupID], l.ServerID)
	}
	for _, l := range mgr {
		managers[l.GroupID] = append(managers[l.GroupID], l.UserID)
	}
	for i, r := range rows {
		out[i] = domain.Group{ID: r.ID, Name: r.Name, Description: r.Description, Segment: r.Segment,
			ServerIDs: orEmpty(servers[r.ID]), ManagerIDs: orEmpty(managers[r.ID]), CreatedAt: r.CreatedAt}
	}
	return out, nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// UpdateGroup changes a group's settings.
func (s *Store) UpdateGroup(ctx context.Context, id string, set GroupSettings) (domain.Group, error) {
	var row groupRow
	var cols []string
	if set.Name != nil {
		row.Name = *set.Name
		cols = append(cols, "name")
	}
	if set.Description != nil {
		row.Description = *set.Description
		cols = append(cols, "description")
	}
	if set.Segment != nil {
		row.Segment = *set.Segment
		cols = append(cols, "segment")
	}
	if len(cols) > 0 {
		res := s.conn(ctx).Model(&groupRow{ID: id}).Select(cols).Updates(&row)
		if err := mapErr(res.Error, "group"); err != nil {
			return domain.Group{}, err
		}
		if res.RowsAffected == 0 {
			return domain.Group{}, domain.NotFound("group")
		}
	}
	return s.GetGroup(ctx, SystemScope, id)
}

// DeleteGroup removes a group; its servers stay.
func (s *Store) DeleteGroup(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		for _, m := range []any{&groupServerRow{}, &groupManagerRow{}} {
			if err := tx.conn(ctx).Where("group_id = ?", id).Delete(m).Error; err != nil {
				return mapErr(err, "group")
			}
		}
		res := tx.conn(ctx).Where("id = ?", id).Delete(&groupRow{})
		if res.Error != nil {
			return mapErr(res.Error, "group")
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("group")
		}
		return nil
	})
}

// AddGroupServer assigns a server to a group (idempotent).
func (s *Store) AddGroupServer(ctx context.Context, groupID, serverID string) error {
	return s.addGroupServer(ctx, groupID, serverID)
}

func (s *Store) addGroupServer(ctx context.Context, groupID, serverID string) error {
	if err := s.exists(ctx, &groupRow{}, groupID, "group"); err != nil {
		return err
	}
	if err := s.exists(ctx, &serverRow{}, serverID, "server"); err != nil {
		return err
	}
	var n int64
	s.conn(ctx).Model(&groupServerRow{}).Where("group_id = ? AND server_id = ?", groupID, serverID).Count(&n)
	if n > 0 {
		return nil
	}
	return mapErr(s.conn(ctx).Omit("Group", "Server").Create(&groupServerRow{GroupID: groupID, ServerID: serverID}).Error, "group membership")
}

// RemoveGroupServer removes a server from a group (idempotent).
func (s *Store) RemoveGroupServer(ctx context.Context, groupID, serverID string) error {
	if err := s.exists(ctx, &groupRow{}, groupID, "group"); err != nil {
		return err
	}
	return mapErr(s.conn(ctx).Where("group_id = ? AND server_id = ?", groupID, serverID).Delete(&groupServerRow{}).Error, "group membership")
}

// AddGroupManager assigns a user as a manager of a group (idempotent).
func (s *Store) AddGroupManager(ctx context.Context, groupID, userID string) error {
	if err := s.exists(ctx, &groupRow{}, groupID, "group"); err != nil {
		return err
	}
	if err := s.exists(ctx, &userRow{}, userID, "user"); err != nil {
		return err
	}
	var n int64
	s.conn(ctx).Model(&groupManagerRow{}).Where("group_id = ? AND user_id = ?", groupID, userID).Count(&n)
	if n > 0 {
		return nil
	}
	return mapErr(s.conn(ctx).Omit("Group", "User").Create(&groupManagerRow{GroupID: groupID, UserID: userID}).Error, "group manager")
}

// RemoveGroupManager removes a manager from a group (idempotent).
func (s *Store) RemoveGroupManager(ctx context.Context, groupID, userID string) error {
	if err := s.exists(ctx, &groupRow{}, groupID, "group"); err != nil {
		return err
	}
	return mapErr(s.conn(ctx).Where("group_id = ? AND user_id = ?", groupID, userID).Delete(&groupManagerRow{}).Error, "group manager")
}

func (s *Store) exists(ctx context.Context, model any, id, what string) error {
	var n int64
	if err := s.conn(ctx).Model(model).Where("id = ?", id).Count(&n).Error; err != nil {
		return mapErr(err, what)
	}
	if n == 0 {
		return domain.NotFound(what)
	}
	return nil
}
