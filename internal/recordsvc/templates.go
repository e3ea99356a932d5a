package recordsvc

import (
	"context"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/store"
)

// TemplateInput is the body of template create and update.
type TemplateInput struct {
	Name string
	Sets []records.RecordSet
}

func checkTemplate(in TemplateInput) (string, []records.RecordSet, error) {
	name, err := checkName("name", in.Name)
	if err != nil {
		return "", nil, err
	}
	if in.Sets == nil {
		return "", nil, domain.Invalid("sets_required", "sets is required")
	}
	sets, err := records.NormalizeTemplateSets(in.Sets)
	return name, sets, err
}

// CreateTemplate creates a template in a project (editor).
func (s *Service) CreateTemplate(ctx context.Context, p *domain.Principal, projectID string, in TemplateInput) (store.RecordTemplate, error) {
	name, sets, err := checkTemplate(in)
	if err != nil {
		return store.RecordTemplate{}, err
	}
	var out store.RecordTemplate
	err = s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := tx.GetProject(ctx, projectID); err != nil {
			return err
		}
		if err := authorize(ctx, tx, p, projectID, RoleEditor, "project"); err != nil {
			return err
		}
		out = store.RecordTemplate{ID: newID(), ProjectID: projectID, Name: name, Sets: specsOf(sets), CreatedAt: c.now, UpdatedAt: c.now}
		return tx.CreateTemplate(ctx, out)
	})
	return out, err
}

// ListTemplates lists a project's templates (viewer).
func (s *Service) ListTemplates(ctx context.Context, p *domain.Principal, projectID string) ([]store.RecordTemplate, error) {
	if _, err := s.GetProject(ctx, p, projectID); err != nil {
		return nil, err
	}
	return s.st.ListTemplates(ctx, projectID)
}

func templateFor(ctx context.Context, st *store.Store, p *domain.Principal, id, need string) (store.RecordTemplate, error) {
	t, err := st.GetTemplate(ctx, id)
	if err != nil {
		return store.RecordTemplate{}, err
	}
	if err := authorize(ctx, st, p, t.ProjectID, need, "template"); err != nil {
		return store.RecordTemplate{}, err
	}
	return t, nil
}

// GetTemplate returns a template (viewer).
func (s *Service) GetTemplate(ctx context.Context, p *domain.Principal, id string) (store.RecordTemplate, error) {
	return templateFor(ctx, s.st, p, id, RoleViewer)
}

// UpdateTemplate replaces a template's name and sets (editor). Zones it was
// applied to change only when it is applied again.
func (s *Service) UpdateTemplate(ctx context.Context, p *domain.Principal, id string, in TemplateInput) (store.RecordTemplate, error) {
	name, sets, err := checkTemplate(in)
	if err != nil {
		return store.RecordTemplate{}, err
	}
	var out store.RecordTemplate
	err = s.write(ctx, func(tx *store.Store, c *changes) error {
		t, err := templateFor(ctx, tx, p, id, RoleEditor)
		if err != nil {
			return err
		}
		t.Name, t.Sets, t.UpdatedAt = name, specsOf(sets), c.now
		out = t
		return tx.UpdateTemplate(ctx, t)
	})
	return out, err
}

// DeleteTemplate deletes a template (editor); sets applied from it stay.
func (s *Service) DeleteTemplate(ctx context.Context, p *domain.Principal, id string) error {
	return s.write(ctx, func(tx *store.Store, _ *changes) error {
		if _, err := templateFor(ctx, tx, p, id, RoleEditor); err != nil {
			return err
		}
		return tx.DeleteTemplate(ctx, id)
	})
}

// ApplyTemplate copies a template's sets into a zone of the same project
// (editor) following records.PlanTemplate and returns the report.
func (s *Service) ApplyTemplate(ctx context.Context, p *domain.Principal, id, zoneID string) (records.Report, error) {
	var rep records.Report
	err := s.write(ctx, func(tx *store.Store, c *changes) error {
		t, err := templateFor(ctx, tx, p, id, RoleEditor)
		if err != nil {
			return err
		}
		z, err := zoneFor(ctx, tx, p, zoneID, RoleEditor)
		if err != nil {
			return err
		}
		if z.ProjectID != t.ProjectID {
			return domain.Invalid("zone_other_project", "a template applies only to zones of its own project")
		}
		if z, err = lockZone(ctx, tx, zoneID); err != nil {
			return err
		}
		cur, err := tx.ListRecordSets(ctx, zoneID)
		if err != nil {
			return err
		}
		desired, bad := desiredFor(z, setsOf(t.Sets))
		var plan records.Plan
		plan, rep = records.PlanTemplate(t.ID, desired, records.ZoneState{ZoneID: z.ID, Sets: zoneSetsOf(cur)})
		rep.Conflicts = appendSorted(rep.Conflicts, bad)
		return applyPlan(ctx, tx, z, cur, plan, c)
	})
	return rep, err
}
