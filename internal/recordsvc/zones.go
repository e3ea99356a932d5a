package recordsvc

import (
	"context"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/store"
)

// ZoneInput is the body of zone create (Name required) and update (Name
// must be empty: a zone's origin never changes). Nil fields keep their
// value (update) or take the default (create): default TTL and SOA timers
// from records.DefaultZone, MName "ns1.<zone>", RName "hostmaster.<zone>".
type ZoneInput struct {
	Name                            string
	DefaultTTL                      *int64
	MName, RName                    *string
	Refresh, Retry, Expire, Minimum *uint32
}

func (in ZoneInput) applyTo(z records.Zone) records.Zone {
	if in.DefaultTTL != nil {
		z.DefaultTTL = *in.DefaultTTL
	}
	if in.MName != nil {
		z.MName = *in.MName
	}
	if in.RName != nil {
		z.RName = *in.RName
	}
	for _, f := range []struct {
		in  *uint32
		out *uint32
	}{{in.Refresh, &z.Refresh}, {in.Retry, &z.Retry}, {in.Expire, &z.Expire}, {in.Minimum, &z.Minimum}} {
		if f.in != nil {
			*f.out = *f.in
		}
	}
	return z
}

func storedZone(z records.Zone, base store.DNSZone) store.DNSZone {
	base.Name, base.DefaultTTL, base.MName, base.RName = z.Name, z.DefaultTTL, z.MName, z.RName
	base.Refresh, base.Retry, base.Expire, base.Minimum = z.Refresh, z.Retry, z.Expire, z.Minimum
	return base
}

// CreateZone creates a zone in a project (editor).
func (s *Service) CreateZone(ctx context.Context, p *domain.Principal, projectID string, in ZoneInput) (store.DNSZone, error) {
	origin, err := records.NormalizeOrigin(in.Name)
	if err != nil {
		return store.DNSZone{}, err
	}
	z, err := records.NormalizeZone(in.applyTo(records.DefaultZone(origin, "ns1."+origin, "hostmaster."+origin)))
	if err != nil {
		return store.DNSZone{}, err
	}
	var out store.DNSZone
	err = s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := tx.GetProject(ctx, projectID); err != nil {
			return err
		}
		if err := authorize(ctx, tx, p, projectID, RoleEditor, "project"); err != nil {
			return err
		}
		out = storedZone(z, store.DNSZone{ID: newID(), ProjectID: projectID, Serial: records.NextSerial(0, c.now),
			CreatedAt: c.now, UpdatedAt: c.now})
		if err := tx.CreateZone(ctx, out); err != nil {
			return err
		}
		c.serials[out.ID] = out.Serial
		return nil
	})
	return out, err
}

// ListZones lists a project's zones (viewer).
func (s *Service) ListZones(ctx context.Context, p *domain.Principal, projectID string) ([]store.DNSZone, error) {
	if _, err := s.GetProject(ctx, p, projectID); err != nil {
		return nil, err
	}
	return s.st.ListZones(ctx, projectID)
}

// GetZone returns a zone (viewer).
func (s *Service) GetZone(ctx context.Context, p *domain.Principal, id string) (store.DNSZone, error) {
	return zoneFor(ctx, s.st, p, id, RoleViewer)
}

// UpdateZone changes a zone's default TTL and SOA values (editor) and bumps
// its serial.
func (s *Service) UpdateZone(ctx context.Context, p *domain.Principal, id string, in ZoneInput) (store.DNSZone, error) {
	if in.Name != "" {
		return store.DNSZone{}, domain.Invalid("zone_name_immutable", "a zone's name cannot change; create a new zone")
	}
	var out store.DNSZone
	err := s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := zoneFor(ctx, tx, p, id, RoleEditor); err != nil {
			return err
		}
		cur, err := lockZone(ctx, tx, id)
		if err != nil {
			return err
		}
		z, err := records.NormalizeZone(in.applyTo(zoneOf(cur)))
		if err != nil {
			return err
		}
		out = storedZone(z, cur)
		out.Serial = records.NextSerial(cur.Serial, c.now)
		out.UpdatedAt = c.now
		c.serials[id] = out.Serial
		return tx.UpdateZone(ctx, out)
	})
	return out, err
}

// DeleteZone deletes a zone with its sets (editor); it stops being served.
func (s *Service) DeleteZone(ctx context.Context, p *domain.Principal, id string) error {
	return s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := zoneFor(ctx, tx, p, id, RoleEditor); err != nil {
			return err
		}
		c.gone = append(c.gone, id)
		return tx.DeleteZone(ctx, id)
	})
}

// ExportZone renders a zone as an RFC 1035 zone file (viewer).
func (s *Service) ExportZone(ctx context.Context, p *domain.Principal, id string) ([]byte, error) {
	z, err := zoneFor(ctx, s.st, p, id, RoleViewer)
	if err != nil {
		return nil, err
	}
	sets, err := s.st.ListRecordSets(ctx, id)
	if err != nil {
		return nil, err
	}
	return records.ZoneFile(zoneOf(z), zoneSetsOf(sets))
}

// ListRecordSets lists a zone's sets with their origins (viewer).
func (s *Service) ListRecordSets(ctx context.Context, p *domain.Principal, zoneID string) ([]store.ZoneRecordSet, error) {
	if _, err := zoneFor(ctx, s.st, p, zoneID, RoleViewer); err != nil {
		return nil, err
	}
	return s.st.ListRecordSets(ctx, zoneID)
}

// CreateRecordSet adds a manual set to a zone (editor). A set with the same
// name and type, or a CNAME clash at the name, is a conflict.
func (s *Service) CreateRecordSet(ctx context.Context, p *domain.Principal, zoneID string, in records.RecordSet) (store.ZoneRecordSet, error) {
	var out store.ZoneRecordSet
	err := s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := zoneFor(ctx, tx, p, zoneID, RoleEditor); err != nil {
			return err
		}
		z, err := lockZone(ctx, tx, zoneID)
		if err != nil {
			return err
		}
		n, err := records.NormalizeSet(z.Name, in)
		if err != nil {
			return err
		}
		cur, err := tx.ListRecordSets(ctx, zoneID)
		if err != nil {
			return err
		}
		if err := fits(n, cur, ""); err != nil {
			return err
		}
		out = rowOf(zoneID, records.ZoneSet{RecordSet: n, Origin: records.Manual()}, c.now)
		out.ID = newID()
		if err := tx.CreateRecordSet(ctx, out); err != nil {
			return err
		}
		c.bump(z)
		return nil
	})
	return out, err
}

// UpdateRecordSet replaces a set's name, type, TTL and records (editor). A
// set enforced by a sync group or bound to a source host cannot be edited
// by hand; an edited template set becomes manual.
func (s *Service) UpdateRecordSet(ctx context.Context, p *domain.Principal, zoneID, setID string, in records.RecordSet) (store.ZoneRecordSet, error) {
	var out store.ZoneRecordSet
	err := s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := zoneFor(ctx, tx, p, zoneID, RoleEditor); err != nil {
			return err
		}
		z, err := lockZone(ctx, tx, zoneID)
		if err != nil {
			return err
		}
		old, err := tx.GetRecordSet(ctx, setID)
		if err != nil {
			return err
		}
		if old.ZoneID != zoneID {
			return domain.NotFound("record set")
		}
		if err := editable(old); err != nil {
			return err
		}
		n, err := records.NormalizeSet(z.Name, in)
		if err != nil {
			return err
		}
		cur, err := tx.ListRecordSets(ctx, zoneID)
		if err != nil {
			return err
		}
		if err := fits(n, cur, setID); err != nil {
			return err
		}
		out = rowOf(zoneID, records.ZoneSet{RecordSet: n, Origin: records.Manual()}, c.now)
		out.ID = setID
		if err := tx.UpdateRecordSet(ctx, out); err != nil {
			return err
		}
		c.bump(z)
		return nil
	})
	return out, err
}

// DeleteRecordSet removes a set of any origin (editor). A sync group puts
// its set back the next time its sets are updated.
func (s *Service) DeleteRecordSet(ctx context.Context, p *domain.Principal, zoneID, setID string) error {
	return s.write(ctx, func(tx *store.Store, c *changes) error {
		if _, err := zoneFor(ctx, tx, p, zoneID, RoleEditor); err != nil {
			return err
		}
		z, err := lockZone(ctx, tx, zoneID)
		if err != nil {
			return err
		}
		old, err := tx.GetRecordSet(ctx, setID)
		if err != nil {
			return err
		}
		if old.ZoneID != zoneID {
			return domain.NotFound("record set")
		}
		if err := tx.DeleteRecordSets(ctx, []string{setID}); err != nil {
			return err
		}
		c.bump(z)
		return nil
	})
}

// editable refuses hand edits of sets that automation owns.
func editable(r store.ZoneRecordSet) error {
	switch r.OriginKind {
	case records.OriginSyncGroup.String():
		return domain.Conflict("managed_by_sync_group",
			"this set is enforced by sync group "+r.OriginID+"; change the group's sets or remove the zone from the group")
	case records.OriginSource.String():
		return domain.Conflict("bound_to_source",
			"this set is bound to source host "+r.OriginID+"; update the source or unbind the set")
	}
	return nil
}

// fits checks that set n can live in a zone holding cur (ignoring the set
// with id self): no other set with its key, no CNAME beside other data.
func fits(n records.RecordSet, cur []store.ZoneRecordSet, self string) error {
	for _, r := range cur {
		if r.ID == self || r.Name != n.Name {
			continue
		}
		if r.Type == n.Type {
			return domain.Conflict("duplicate_set", string(n.Key())+": the zone already has this set")
		}
		if r.Type == "CNAME" || n.Type == "CNAME" {
			return domain.Conflict("cname_conflict", string(n.Key())+": a CNAME cannot share its name with other records ("+r.Name+" "+r.Type+")")
		}
	}
	return nil
}
