package recordsvc

import (
	"context"
	"slices"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/store"
)

// SyncGroupInput is the body of sync group create.
type SyncGroupInput struct {
	Name     string
	Priority int
}

// maxPriority bounds a group's priority; lower wins, like MX preference,
// and 16 bits are plenty to order any set of groups.
const maxPriority = 65535

// SyncGroupView is a sync group with its member zones.
type SyncGroupView struct {
	store.SyncGroup
	ZoneIDs []string
}

// CreateSyncGroup creates a sync group; any signed-in user may, and becomes
// its owner.
func (s *Service) CreateSyncGroup(ctx context.Context, p *domain.Principal, in SyncGroupInput) (SyncGroupView, error) {
	if err := authenticated(p); err != nil {
		return SyncGroupView{}, err
	}
	name, err := checkName("name", in.Name)
	if err != nil {
		return SyncGroupView{}, err
	}
	if in.Priority < 0 || in.Priority > maxPriority {
		return SyncGroupView{}, domain.Invalid("invalid_priority", "priority must be between 0 and 65535 (lower wins)")
	}
	var out SyncGroupView
	err = s.write(ctx, func(tx *store.Store, c *changes) error {
		out = SyncGroupView{SyncGroup: store.SyncGroup{ID: newID(), Name: name, Priority: in.Priority, OwnerID: p.UserID,
			Sets: []store.SetSpec{}, CreatedAt: c.now, UpdatedAt: c.now}, ZoneIDs: []string{}}
		return tx.CreateSyncGroup(ctx, out.SyncGroup)
	})
	return out, err
}

// groupFor loads a group the caller manages: its owner or an LCM admin.
// Anyone else gets not-found.
func groupFor(ctx context.Context, st *store.Store, p *domain.Principal, id string, lock bool) (store.SyncGroup, error) {
	if err := authenticated(p); err != nil {
		return store.SyncGroup{}, err
	}
	g, err := st.GetSyncGroup(ctx, id, lock)
	if err != nil {
		return store.SyncGroup{}, err
	}
	if g.OwnerID != p.UserID && !p.IsAdmin() {
		return store.SyncGroup{}, domain.NotFound("sync group")
	}
	return g, nil
}

// ListSyncGroups lists the caller's groups; admins see all.
func (s *Service) ListSyncGroups(ctx context.Context, p *domain.Principal) ([]SyncGroupView, error) {
	if err := authenticated(p); err != nil {
		return nil, err
	}
	owner := p.UserID
	if p.IsAdmin() {
		owner = ""
	}
	gs, err := s.st.ListSyncGroups(ctx, owner)
	if err != nil {
		return nil, err
	}
	out := make([]SyncGroupView, len(gs))
	for i, g := range gs {
		ids, err := s.st.SyncGroupZoneIDs(ctx, g.ID)
		if err != nil {
			return nil, err
		}
		out[i] = SyncGroupView{SyncGroup: g, ZoneIDs: ids}
	}
	return out, nil
}

// GetSyncGroup returns a group the caller manages.
func (s *Service) GetSyncGroup(ctx context.Context, p *domain.Principal, id string) (SyncGroupView, error) {
	g, err := groupFor(ctx, s.st, p, id, false)
	if err != nil {
		return SyncGroupView{}, err
	}
	ids, err := s.st.SyncGroupZoneIDs(ctx, id)
	if err != nil {
		return SyncGroupView{}, err
	}
	return SyncGroupView{SyncGroup: g, ZoneIDs: ids}, nil
}

// AddSyncGroupMember adds a zone to a group and enforces the group's sets
// on it at once. The caller manages the group and is editor in the zone's
// project.
func (s *Service) AddSyncGroupMember(ctx context.Context, p *domain.Principal, id, zoneID string) (records.Report, error) {
	var rep records.Report
	err := s.write(ctx, func(tx *store.Store, c *changes) error {
		g, err := groupFor(ctx, tx, p, id, true)
		if err != nil {
			return err
		}
		if _, err := zoneFor(ctx, tx, p, zoneID, RoleEditor); err != nil {
			return err
		}
		if err := tx.AddSyncGroupMember(ctx, id, zoneID, c.now); err != nil {
			return err
		}
		reps, err := enforce(ctx, tx, g, []string{zoneID}, c)
		if err != nil {
			return err
		}
		rep = reps[0]
		return nil
	})
	return rep, err
}

// RemoveSyncGroupMember removes a zone from a group and deletes the
// group's sets from it. The group's manager or an editor of the zone's
// project may do it.
func (s *Service) RemoveSyncGroupMember(ctx context.Context, p *domain.Principal, id, zoneID string) error {
	return s.write(ctx, func(tx *store.Store, c *changes) error {
		if err := authenticated(p); err != nil {
			return err
		}
		g, err := tx.GetSyncGroup(ctx, id, true)
		if err != nil {
			return err
		}
		if g.OwnerID != p.UserID && !p.IsAdmin() {
			z, err := tx.GetZone(ctx, zoneID)
			if err != nil {
				return domain.NotFound("sync group")
			}
			if role, err := roleIn(ctx, tx, p, z.ProjectID); err != nil {
				return err
			} else if rank(role) < rank(RoleEditor) {
				return domain.NotFound("sync group")
			}
		}
		if err := tx.RemoveSyncGroupMember(ctx, id, zoneID); err != nil {
			return err
		}
		g.Sets = nil
		_, err = enforce(ctx, tx, g, []string{zoneID}, c)
		return err
	})
}

// UpdateSyncGroupSets replaces a group's sets and enforces them on every
// member zone in one transaction (group manager), returning one report per
// member zone, by zone id.
func (s *Service) UpdateSyncGroupSets(ctx context.Context, p *domain.Principal, id string, sets []records.RecordSet) ([]records.Report, error) {
	if sets == nil {
		return nil, domain.Invalid("sets_required", "sets is required")
	}
	norm, err := records.NormalizeTemplateSets(sets)
	if err != nil {
		return nil, err
	}
	var reps []records.Report
	err = s.write(ctx, func(tx *store.Store, c *changes) error {
		g, err := groupFor(ctx, tx, p, id, true)
		if err != nil {
			return err
		}
		g.Sets = specsOf(norm)
		if err := tx.SetSyncGroupSets(ctx, id, g.Sets, c.now); err != nil {
			return err
		}
		zoneIDs, err := tx.SyncGroupZoneIDs(ctx, id)
		if err != nil {
			return err
		}
		reps, err = enforce(ctx, tx, g, zoneIDs, c)
		return err
	})
	return reps, err
}

// DeleteSyncGroup deletes a group (group manager) and the sets it owns in
// its member zones.
func (s *Service) DeleteSyncGroup(ctx context.Context, p *domain.Principal, id string) error {
	return s.write(ctx, func(tx *store.Store, c *changes) error {
		g, err := groupFor(ctx, tx, p, id, true)
		if err != nil {
			return err
		}
		zoneIDs, err := tx.ZoneIDsByOrigin(ctx, records.OriginSyncGroup.String(), id)
		if err != nil {
			return err
		}
		g.Sets = nil
		if _, err := enforce(ctx, tx, g, zoneIDs, c); err != nil {
			return err
		}
		return tx.DeleteSyncGroup(ctx, id)
	})
}

// enforce plans and writes group g's sets on the given zones with bulk
// reads and writes: one locking read of the zones, one read of all their
// sets, one read of the competing groups' priorities, batched upserts and
// deletes, and one serial update per changed zone batch.
func enforce(ctx context.Context, tx *store.Store, g store.SyncGroup, zoneIDs []string, c *changes) ([]records.Report, error) {
	zones, err := tx.LockZones(ctx, zoneIDs)
	if err != nil {
		return nil, err
	}
	all, err := tx.RecordSetsOfZones(ctx, zoneIDs)
	if err != nil {
		return nil, err
	}
	byZone := make(map[string][]store.ZoneRecordSet, len(zones))
	groupIDs := map[string]bool{}
	for _, r := range all {
		byZone[r.ZoneID] = append(byZone[r.ZoneID], r)
		if r.OriginKind == records.OriginSyncGroup.String() && r.OriginID != g.ID {
			groupIDs[r.OriginID] = true
		}
	}
	ids := make([]string, 0, len(groupIDs))
	for id := range groupIDs {
		ids = append(ids, id)
	}
	prio, err := tx.SyncGroupPriorities(ctx, ids)
	if err != nil {
		return nil, err
	}
	ref := records.SyncGroupRef{ID: g.ID, Priority: g.Priority}
	sets := setsOf(g.Sets)
	var puts []store.ZoneRecordSet
	var dels []string
	reps := make([]records.Report, 0, len(zones))
	for _, z := range zones {
		cur := byZone[z.ID]
		desired, bad := desiredFor(z, sets)
		plan, rep := records.PlanSync(ref, desired, records.ZoneState{ZoneID: z.ID, Sets: zoneSetsOf(cur), GroupPriority: prio})
		rep.Conflicts = appendSorted(rep.Conflicts, bad)
		reps = append(reps, rep)
		if plan.Empty() {
			continue
		}
		keyID := make(map[records.SetKey]string, len(cur))
		for _, r := range cur {
			keyID[records.MakeKey(r.Name, r.Type)] = r.ID
		}
		for _, k := range plan.Delete {
			dels = append(dels, keyID[k])
		}
		for _, ps := range plan.Put {
			puts = append(puts, rowOf(z.ID, ps, c.now))
		}
		c.bump(z)
	}
	if err := tx.DeleteRecordSets(ctx, dels); err != nil {
		return nil, err
	}
	if err := tx.PutRecordSets(ctx, puts); err != nil {
		return nil, err
	}
	slices.SortFunc(reps, func(a, b records.Report) int {
		switch {
		case a.ZoneID < b.ZoneID:
			return -1
		case a.ZoneID > b.ZoneID:
			return 1
		}
		return 0
	})
	return reps, nil
}
