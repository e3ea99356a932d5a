package recordsvc

import (
	"context"
	"slices"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/store"
)

// SourceInput is the body of source host create and update.
type SourceInput struct {
	Name       string
	IPv4, IPv6 []string
}

// BindInput names the set a source is bound to or unbound from.
type BindInput struct {
	ZoneID string
	Name   string
	Type   string
}

func checkSource(in SourceInput) (SourceInput, error) {
	name, err := checkName("name", in.Name)
	if err != nil {
		return in, err
	}
	a, aaaa, err := records.SourceSets(in.IPv4, in.IPv6)
	if err != nil {
		return in, err
	}
	return SourceInput{Name: name, IPv4: a, IPv6: aaaa}, nil
}

// CreateSourceHost creates a source host in a project (editor).
func (s *Service) CreateSourceHost(ctx context.Context, p *domain.Principal, projectID string, in SourceInput) (store.SourceHost, error) {
	in, err := checkSource(in)
	if err != nil {
		return store.SourceHost{}, err
	}
	var out store.SourceHost
	err = s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := tx.GetProject(ctx, projectID); err != nil {
			return err
		}
		if err := authorize(ctx, tx, p, projectID, RoleEditor, "project"); err != nil {
			return err
		}
		out = store.SourceHost{ID: newID(), ProjectID: projectID, Name: in.Name, IPv4: in.IPv4, IPv6: in.IPv6,
			CreatedAt: c.now, UpdatedAt: c.now}
		return tx.CreateSourceHost(ctx, out)
	})
	return out, err
}

// ListSourceHosts lists a project's source hosts (viewer).
func (s *Service) ListSourceHosts(ctx context.Context, p *domain.Principal, projectID string) ([]store.SourceHost, error) {
	if _, err := s.GetProject(ctx, p, projectID); err != nil {
		return nil, err
	}
	return s.st.ListSourceHosts(ctx, projectID)
}

func sourceFor(ctx context.Context, st *store.Store, p *domain.Principal, id, need string, lock bool) (store.SourceHost, error) {
	h, err := st.GetSourceHost(ctx, id, lock)
	if err != nil {
		return store.SourceHost{}, err
	}
	if err := authorize(ctx, st, p, h.ProjectID, need, "source host"); err != nil {
		return store.SourceHost{}, err
	}
	return h, nil
}

// GetSourceHost returns a source host (viewer).
func (s *Service) GetSourceHost(ctx context.Context, p *domain.Principal, id string) (store.SourceHost, error) {
	return sourceFor(ctx, s.st, p, id, RoleViewer, false)
}

// UpdateSourceHost renames a source and replaces its addresses (editor),
// and in the same transaction propagates them to every bound set: A sets
// get the IPv4 list, AAAA sets the IPv6 list. Only sets whose records
// change are written, with one statement per type; each zone holding one
// gets its serial bumped.
func (s *Service) UpdateSourceHost(ctx context.Context, p *domain.Principal, id string, in SourceInput) (store.SourceHost, error) {
	in, err := checkSource(in)
	if err != nil {
		return store.SourceHost{}, err
	}
	var out store.SourceHost
	err = s.write(ctx, func(tx *store.Store, c *changes) error {
		h, err := sourceFor(ctx, tx, p, id, RoleEditor, true)
		if err != nil {
			return err
		}
		h.Name, h.IPv4, h.IPv6, h.UpdatedAt = in.Name, in.IPv4, in.IPv6, c.now
		if err := tx.UpdateSourceHost(ctx, h); err != nil {
			return err
		}
		out = h
		bound, err := tx.RecordSetsByOrigin(ctx, records.OriginSource.String(), id)
		if err != nil {
			return err
		}
		// The same decision as records.Propagate, kept per zone: which
		// bound sets get new records, and so which zones change.
		want := map[string][]string{"A": in.IPv4, "AAAA": in.IPv6}
		types := map[string]bool{}
		var zoneIDs []string
		for _, r := range bound {
			if recs, ok := want[r.Type]; ok && !slices.Equal(r.Records, recs) {
				types[r.Type] = true
				zoneIDs = append(zoneIDs, r.ZoneID)
			}
		}
		if len(zoneIDs) == 0 {
			return nil
		}
		slices.Sort(zoneIDs)
		zones, err := tx.LockZones(ctx, slices.Compact(zoneIDs))
		if err != nil {
			return err
		}
		for _, typ := range []string{"A", "AAAA"} {
			if types[typ] {
				if err := tx.SetRecordsByOrigin(ctx, records.OriginSource.String(), id, typ, want[typ], c.now); err != nil {
					return err
				}
			}
		}
		for _, z := range zones {
			c.bump(z)
		}
		return nil
	})
	return out, err
}

// DeleteSourceHost deletes a source (editor). Its bound sets are kept as
// manual sets with their last records; bound sets without records are
// deleted.
func (s *Service) DeleteSourceHost(ctx context.Context, p *domain.Principal, id string) error {
	return s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := sourceFor(ctx, tx, p, id, RoleEditor, true); err != nil {
			return err
		}
		bound, err := tx.RecordSetsByOrigin(ctx, records.OriginSource.String(), id)
		if err != nil {
			return err
		}
		if err := s.release(ctx, tx, bound, c); err != nil {
			return err
		}
		return tx.DeleteSourceHost(ctx, id)
	})
}

// release turns bound sets into manual ones (or deletes them when empty)
// and bumps their zones.
func (s *Service) release(ctx context.Context, tx *store.Store, bound []store.ZoneRecordSet, c *changes) error {
	if len(bound) == 0 {
		return nil
	}
	zoneIDs := make([]string, 0, len(bound))
	var dels []string
	var keep []store.ZoneRecordSet
	for _, r := range bound {
		zoneIDs = append(zoneIDs, r.ZoneID)
		if len(r.Records) == 0 {
			dels = append(dels, r.ID)
			continue
		}
		r.OriginKind, r.OriginID, r.UpdatedAt = records.OriginManual.String(), "", c.now
		keep = append(keep, r)
	}
	slices.Sort(zoneIDs)
	zones, err := tx.LockZones(ctx, slices.Compact(zoneIDs))
	if err != nil {
		return err
	}
	if err := tx.DeleteRecordSets(ctx, dels); err != nil {
		return err
	}
	if err := tx.PutRecordSets(ctx, keep); err != nil {
		return err
	}
	for _, z := range zones {
		c.bump(z)
	}
	return nil
}

// bindTarget loads the source (editor) and the zone, which must be in the
// source's project, and normalizes the set's name and type.
func bindTarget(ctx context.Context, tx *store.Store, p *domain.Principal, id string, in BindInput) (store.SourceHost, store.DNSZone, records.RecordSet, error) {
	h, err := sourceFor(ctx, tx, p, id, RoleEditor, true)
	if err != nil {
		return h, store.DNSZone{}, records.RecordSet{}, err
	}
	z, err := zoneFor(ctx, tx, p, in.ZoneID, RoleEditor)
	if err != nil {
		return h, z, records.RecordSet{}, err
	}
	if z.ProjectID != h.ProjectID {
		return h, z, records.RecordSet{}, domain.Invalid("zone_other_project", "a source binds only to zones of its own project")
	}
	// A placeholder address validates the name and the type together.
	probe := records.RecordSet{Name: in.Name, Type: in.Type, Records: []string{"192.0.2.1"}}
	switch {
	case equalFold(in.Type, "AAAA"):
		probe.Records = []string{"2001:db8::1"}
	case !equalFold(in.Type, "A"):
		return h, z, records.RecordSet{}, domain.Invalid("invalid_type", "a source binds only A or AAAA sets")
	}
	n, err := records.NormalizeSet(z.Name, probe)
	if err != nil {
		return h, z, records.RecordSet{}, err
	}
	if z, err = lockZone(ctx, tx, z.ID); err != nil {
		return h, z, records.RecordSet{}, err
	}
	return h, z, n, nil
}

// BindSourceHost binds an A or AAAA set of a zone to the source (editor):
// it creates the set with the source's addresses of that family, or claims
// an existing manual or template set (its records are replaced). A set
// enforced by a sync group, bound to another source, or a CNAME at the
// name is a conflict. Binding twice changes nothing.
func (s *Service) BindSourceHost(ctx context.Context, p *domain.Principal, id string, in BindInput) (store.ZoneRecordSet, error) {
	var out store.ZoneRecordSet
	err := s.write(ctx, func(tx *store.Store, c *changes) error {
		h, z, n, err := bindTarget(ctx, tx, p, id, in)
		if err != nil {
			return err
		}
		recs := h.IPv4
		if n.Type == "AAAA" {
			recs = h.IPv6
		}
		cur, err := tx.ListRecordSets(ctx, z.ID)
		if err != nil {
			return err
		}
		var existing *store.ZoneRecordSet
		for i, r := range cur {
			switch {
			case r.Name != n.Name:
			case r.Type == n.Type:
				existing = &cur[i]
			case r.Type == "CNAME":
				return domain.Conflict("cname_conflict", string(n.Key())+": a CNAME is at this name")
			}
		}
		src := records.FromSource(id)
		switch {
		case existing == nil:
			out = store.ZoneRecordSet{ID: newID(), ZoneID: z.ID, Name: n.Name, Type: n.Type,
				Records: slices.Clone(recs), OriginKind: src.Kind.String(), OriginID: id, UpdatedAt: c.now}
			if err := tx.CreateRecordSet(ctx, out); err != nil {
				return err
			}
		case existing.OriginKind == src.Kind.String() && existing.OriginID == id:
			out = *existing
			return nil
		case existing.OriginKind == records.OriginSyncGroup.String() || existing.OriginKind == src.Kind.String():
			return editable(*existing)
		default:
			out = *existing
			out.Records, out.OriginKind, out.OriginID, out.UpdatedAt = slices.Clone(recs), src.Kind.String(), id, c.now
			if err := tx.UpdateRecordSet(ctx, out); err != nil {
				return err
			}
		}
		c.bump(z)
		return nil
	})
	return out, err
}

// UnbindSourceHost releases a set bound to the source (editor): it becomes
// a manual set with its current records, or is deleted when it has none.
func (s *Service) UnbindSourceHost(ctx context.Context, p *domain.Principal, id string, in BindInput) error {
	return s.write(ctx, func(tx *store.Store, c *changes) error {
		_, z, n, err := bindTarget(ctx, tx, p, id, in)
		if err != nil {
			return err
		}
		cur, err := tx.ListRecordSets(ctx, z.ID)
		if err != nil {
			return err
		}
		for _, r := range cur {
			if r.Name == n.Name && r.Type == n.Type && r.OriginKind == records.OriginSource.String() && r.OriginID == id {
				return s.release(ctx, tx, []store.ZoneRecordSet{r}, c)
			}
		}
		return domain.NotFound("binding of " + string(n.Key()) + " to this source")
	})
}

func equalFold(a, b string) bool { return strings.EqualFold(strings.TrimSpace(a), b) }
