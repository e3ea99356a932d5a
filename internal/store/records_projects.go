package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// Project is a records-area project: a container of zones, templates and
// source hosts with members.
type Project struct {
	ID          string
	Name        string
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ProjectMember is a user's role in a project ("owner", "editor", "viewer").
type ProjectMember struct {
	ProjectID string
	UserID    string
	Username  string
	Role      string
	CreatedAt time.Time
}

func projectFromRow(r projectRow) Project {
	return Project{ID: r.ID, Name: r.Name, Description: r.Description, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// CreateProject inserts a project and makes ownerID its owner.
func (s *Store) CreateProject(ctx context.Context, p Project, ownerID string) error {
	db := s.conn(ctx)
	row := projectRow{ID: p.ID, Name: p.Name, Description: p.Description, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if err := db.Create(&row).Error; err != nil {
		return mapErr(err, "project "+p.Name)
	}
	return mapErr(db.Create(&projectMemberRow{ProjectID: p.ID, UserID: ownerID, Role: "owner", CreatedAt: p.CreatedAt}).Error,
		"project member")
}

// GetProject returns a project or a not-found error.
func (s *Store) GetProject(ctx context.Context, id string) (Project, error) {
	var r projectRow
	if err := s.conn(ctx).Where("id = ?", id).First(&r).Error; err != nil {
		return Project{}, mapErr(err, "project")
	}
	return projectFromRow(r), nil
}

// ListProjects returns every project (all) or those userID is a member of,
// by name.
func (s *Store) ListProjects(ctx context.Context, userID string, all bool) ([]Project, error) {
	var rows []projectRow
	q := s.conn(ctx).Order("name")
	if !all {
		q = q.Where("id IN (SELECT project_id FROM project_members WHERE user_id = ?)", userID)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list projects: %w", err)
	}
	out := make([]Project, len(rows))
	for i, r := range rows {
		out[i] = projectFromRow(r)
	}
	return out, nil
}

// UpdateProject saves a project's name and description.
func (s *Store) UpdateProject(ctx context.Context, p Project) error {
	res := s.conn(ctx).Model(&projectRow{}).Where("id = ?", p.ID).
		Updates(map[string]any{"name": p.Name, "description": p.Description, "updated_at": p.UpdatedAt})
	if res.Error != nil {
		return mapErr(res.Error, "project "+p.Name)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("project")
	}
	return nil
}

// DeleteProject deletes a project with its members, zones (and their
// sets), templates and source hosts.
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	res := s.conn(ctx).Where("id = ?", id).Delete(&projectRow{})
	if res.Error != nil {
		return mapErr(res.Error, "project")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("project")
	}
	return nil
}

// MemberRole returns userID's role in a project, "" when not a member.
func (s *Store) MemberRole(ctx context.Context, projectID, userID string) (string, error) {
	var rows []projectMemberRow
	if err := s.conn(ctx).Where("project_id = ? AND user_id = ?", projectID, userID).Limit(1).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("store: member role: %w", err)
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].Role, nil
}

// ListMembers returns a project's members with their usernames, by username.
func (s *Store) ListMembers(ctx context.Context, projectID string) ([]ProjectMember, error) {
	var out []ProjectMember
	err := s.conn(ctx).Table("project_members AS m").
		Select("m.project_id, m.user_id, u.username, m.role, m.created_at").
		Joins("JOIN users u ON u.id = m.user_id").
		Where("m.project_id = ?", projectID).Order("u.username").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("store: list members: %w", err)
	}
	return out, nil
}

// GetMember returns one membership or a not-found error.
func (s *Store) GetMember(ctx context.Context, projectID, userID string) (ProjectMember, error) {
	var out []ProjectMember
	err := s.conn(ctx).Table("project_members AS m").
		Select("m.project_id, m.user_id, u.username, m.role, m.created_at").
		Joins("JOIN users u ON u.id = m.user_id").
		Where("m.project_id = ? AND m.user_id = ?", projectID, userID).Scan(&out).Error
	if err != nil {
		return ProjectMember{}, fmt.Errorf("store: get member: %w", err)
	}
	if len(out) == 0 {
		return ProjectMember{}, domain.NotFound("member")
	}
	return out[0], nil
}

// AddMember inserts a membership; an existing one is a conflict.
func (s *Store) AddMember(ctx context.Context, m ProjectMember) error {
	return mapErr(s.conn(ctx).Create(&projectMemberRow{ProjectID: m.ProjectID, UserID: m.UserID, Role: m.Role,
		CreatedAt: m.CreatedAt}).Error, "member")
}

// UpdateMember changes a member's role.
func (s *Store) UpdateMember(ctx context.Context, projectID, userID, role string) error {
	res := s.conn(ctx).Model(&projectMemberRow{}).Where("project_id = ? AND user_id = ?", projectID, userID).
		Update("role", role)
	if res.Error != nil {
		return mapErr(res.Error, "member")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("member")
	}
	return nil
}

// RemoveMember deletes a membership.
func (s *Store) RemoveMember(ctx context.Context, projectID, userID string) error {
	res := s.conn(ctx).Where("project_id = ? AND user_id = ?", projectID, userID).Delete(&projectMemberRow{})
	if res.Error != nil {
		return mapErr(res.Error, "member")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("member")
	}
	return nil
}

// CountOwners counts a project's owners (the last one cannot leave).
func (s *Store) CountOwners(ctx context.Context, projectID string) (int64, error) {
	var n int64
	err := s.conn(ctx).Model(&projectMemberRow{}).Where("project_id = ? AND role = ?", projectID, "owner").Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("store: count owners: %w", err)
	}
	return n, nil
}

// LockProject takes a row lock on a project (PostgreSQL) so membership
// changes of one project serialise; SQLite transactions are serial anyway.
func (s *Store) LockProject(ctx context.Context, id string) error {
	if s.dialect != Postgres {
		return nil
	}
	var ids []string
	if err := s.conn(ctx).Raw("SELECT id FROM projects WHERE id = ? FOR UPDATE", id).Scan(&ids).Error; err != nil {
		return fmt.Errorf("store: lock project: %w", err)
	}
	return nil
}

// UsernameOf returns a user's username, or a not-found error.
func (s *Store) UsernameOf(ctx context.Context, userID string) (string, error) {
	var r userRow
	if err := s.conn(ctx).Select("id", "username").Where("id = ?", userID).First(&r).Error; err != nil {
		return "", mapErr(err, "user")
	}
	return r.Username, nil
}
