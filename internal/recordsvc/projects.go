package recordsvc

import (
	"context"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// ProjectInput is the body of project create and update.
type ProjectInput struct {
	Name        string
	Description string
}

// maxDescriptionLen bounds a project's description (the column size).
const maxDescriptionLen = 1024

func checkProject(in ProjectInput) (ProjectInput, error) {
	n, err := checkName("name", in.Name)
	if err != nil {
		return in, err
	}
	if len(in.Description) > maxDescriptionLen {
		return in, domain.Invalid("description_too_long", "description is longer than 1024 bytes")
	}
	return ProjectInput{Name: n, Description: in.Description}, nil
}

// CreateProject creates a project; any signed-in user may, and becomes its owner.
func (s *Service) CreateProject(ctx context.Context, p *domain.Principal, in ProjectInput) (store.Project, error) {
	if err := authenticated(p); err != nil {
		return store.Project{}, err
	}
	in, err := checkProject(in)
	if err != nil {
		return store.Project{}, err
	}
	now := s.now()
	pr := store.Project{ID: newID(), Name: in.Name, Description: in.Description, CreatedAt: now, UpdatedAt: now}
	err = s.write(ctx, func(tx *store.Store, _ *changes) error { return tx.CreateProject(ctx, pr, p.UserID) })
	return pr, err
}

// ListProjects lists the caller's projects; admins see all.
func (s *Service) ListProjects(ctx context.Context, p *domain.Principal) ([]store.Project, error) {
	if err := authenticated(p); err != nil {
		return nil, err
	}
	return s.st.ListProjects(ctx, p.UserID, p.IsAdmin())
}

// GetProject returns a project the caller is a member of (viewer).
func (s *Service) GetProject(ctx context.Context, p *domain.Principal, id string) (store.Project, error) {
	pr, err := s.st.GetProject(ctx, id)
	if err != nil {
		return store.Project{}, err
	}
	if err := authorize(ctx, s.st, p, id, RoleViewer, "project"); err != nil {
		return store.Project{}, err
	}
	return pr, nil
}

// UpdateProject renames or re-describes a project (owner).
func (s *Service) UpdateProject(ctx context.Context, p *domain.Principal, id string, in ProjectInput) (store.Project, error) {
	in, err := checkProject(in)
	if err != nil {
		return store.Project{}, err
	}
	var out store.Project
	err = s.write(ctx, func(tx *store.Store, _ *changes) error {
		pr, err := tx.GetProject(ctx, id)
		if err != nil {
			return err
		}
		if err := authorize(ctx, tx, p, id, RoleOwner, "project"); err != nil {
			return err
		}
		pr.Name, pr.Description, pr.UpdatedAt = in.Name, in.Description, s.now()
		out = pr
		return tx.UpdateProject(ctx, pr)
	})
	return out, err
}

// DeleteProject deletes a project with everything in it (owner). Its zones
// stop being served.
func (s *Service) DeleteProject(ctx context.Context, p *domain.Principal, id string) error {
	return s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := tx.GetProject(ctx, id); err != nil {
			return err
		}
		if err := authorize(ctx, tx, p, id, RoleOwner, "project"); err != nil {
			return err
		}
		zones, err := tx.ListZones(ctx, id)
		if err != nil {
			return err
		}
		for _, z := range zones {
			c.gone = append(c.gone, z.ID)
		}
		return tx.DeleteProject(ctx, id)
	})
}

// MemberInput is the body of member add and update.
type MemberInput struct {
	UserID string
	Role   string
}

func checkRole(role string) error {
	if rank(role) == 0 {
		return domain.Invalid("invalid_role", "role must be owner, editor or viewer")
	}
	return nil
}

// ListMembers lists a project's members (viewer).
func (s *Service) ListMembers(ctx context.Context, p *domain.Principal, projectID string) ([]store.ProjectMember, error) {
	if _, err := s.GetProject(ctx, p, projectID); err != nil {
		return nil, err
	}
	return s.st.ListMembers(ctx, projectID)
}

// AddMember adds a user with a role (owner).
func (s *Service) AddMember(ctx context.Context, p *domain.Principal, projectID string, in MemberInput) (store.ProjectMember, error) {
	if err := checkRole(in.Role); err != nil {
		return store.ProjectMember{}, err
	}
	var out store.ProjectMember
	err := s.write(ctx, func(tx *store.Store, _ *changes) error {
		if err := s.ownerOf(ctx, tx, p, projectID); err != nil {
			return err
		}
		if _, err := tx.UsernameOf(ctx, in.UserID); err != nil {
			return err
		}
		if err := tx.AddMember(ctx, store.ProjectMember{ProjectID: projectID, UserID: in.UserID, Role: in.Role, CreatedAt: s.now()}); err != nil {
			return err
		}
		var err error
		out, err = tx.GetMember(ctx, projectID, in.UserID)
		return err
	})
	return out, err
}

// UpdateMember changes a member's role (owner). The last owner cannot be
// demoted.
func (s *Service) UpdateMember(ctx context.Context, p *domain.Principal, projectID, userID, role string) (store.ProjectMember, error) {
	if err := checkRole(role); err != nil {
		return store.ProjectMember{}, err
	}
	var out store.ProjectMember
	err := s.write(ctx, func(tx *store.Store, _ *changes) error {
		if err := s.ownerOf(ctx, tx, p, projectID); err != nil {
			return err
		}
		m, err := tx.GetMember(ctx, projectID, userID)
		if err != nil {
			return err
		}
		if m.Role == RoleOwner && role != RoleOwner {
			if err := lastOwner(ctx, tx, projectID); err != nil {
				return err
			}
		}
		if err := tx.UpdateMember(ctx, projectID, userID, role); err != nil {
			return err
		}
		m.Role = role
		out = m
		return nil
	})
	return out, err
}

// RemoveMember removes a member (owner). The last owner cannot be removed.
func (s *Service) RemoveMember(ctx context.Context, p *domain.Principal, projectID, userID string) error {
	return s.write(ctx, func(tx *store.Store, _ *changes) error {
		if err := s.ownerOf(ctx, tx, p, projectID); err != nil {
			return err
		}
		m, err := tx.GetMember(ctx, projectID, userID)
		if err != nil {
			return err
		}
		if m.Role == RoleOwner {
			if err := lastOwner(ctx, tx, projectID); err != nil {
				return err
			}
		}
		return tx.RemoveMember(ctx, projectID, userID)
	})
}

// ownerOf locks the project and checks the caller owns it.
func (s *Service) ownerOf(ctx context.Context, tx *store.Store, p *domain.Principal, projectID string) error {
	if _, err := tx.GetProject(ctx, projectID); err != nil {
		return err
	}
	if err := tx.LockProject(ctx, projectID); err != nil {
		return err
	}
	return authorize(ctx, tx, p, projectID, RoleOwner, "project")
}

func lastOwner(ctx context.Context, tx *store.Store, projectID string) error {
	n, err := tx.CountOwners(ctx, projectID)
	if err != nil {
		return err
	}
	if n <= 1 {
		return domain.Conflict("last_owner", "a project keeps at least one owner")
	}
	return nil
}
