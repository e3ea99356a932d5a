package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// SetSpec is a record set of a template or sync group, stored as JSON.
type SetSpec struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     *int64   `json:"ttl,omitempty"`
	Records []string `json:"records"`
}

// RecordTemplate is a project's reusable list of record sets.
type RecordTemplate struct {
	ID, ProjectID, Name  string
	Sets                 []SetSpec
	CreatedAt, UpdatedAt time.Time
}

// SyncGroup is a set of record sets enforced on its member zones.
type SyncGroup struct {
	ID, Name             string
	Priority             int
	OwnerID              string
	Sets                 []SetSpec
	CreatedAt, UpdatedAt time.Time
}

// SourceHost is a project's named IP source.
type SourceHost struct {
	ID, ProjectID, Name  string
	IPv4, IPv6           []string
	CreatedAt, UpdatedAt time.Time
}

func encodeJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func specs(s []SetSpec) []SetSpec {
	if s == nil {
		return []SetSpec{}
	}
	return s
}

func strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func decodeJSON(raw, what string, dst any) error {
	if err := json.Unmarshal([]byte(raw), dst); err != nil {
		return fmt.Errorf("store: %s is malformed: %w", what, err)
	}
	return nil
}

func templateFromRow(r templateRow) (RecordTemplate, error) {
	t := RecordTemplate{ID: r.ID, ProjectID: r.ProjectID, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := decodeJSON(r.Sets, "template "+r.ID, &t.Sets); err != nil {
		return RecordTemplate{}, err
	}
	t.Sets = specs(t.Sets)
	return t, nil
}

// CreateTemplate inserts a template; a taken name in the project is a conflict.
func (s *Store) CreateTemplate(ctx context.Context, t RecordTemplate) error {
	return mapErr(s.conn(ctx).Create(&templateRow{ID: t.ID, ProjectID: t.ProjectID, Name: t.Name,
		Sets: encodeJSON(specs(t.Sets)), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}).Error, "template "+t.Name)
}

// GetTemplate returns a template or a not-found error.
func (s *Store) GetTemplate(ctx context.Context, id string) (RecordTemplate, error) {
	var r templateRow
	if err := s.conn(ctx).Where("id = ?", id).First(&r).Error; err != nil {
		return RecordTemplate{}, mapErr(err, "template")
	}
	return templateFromRow(r)
}

// ListTemplates returns a project's templates by name.
func (s *Store) ListTemplates(ctx context.Context, projectID string) ([]RecordTemplate, error) {
	var rows []templateRow
	if err := s.conn(ctx).Where("project_id = ?", projectID).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list templates: %w", err)
	}
	out := make([]RecordTemplate, 0, len(rows))
	for _, r := range rows {
		t, err := templateFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// UpdateTemplate saves a template's name and sets.
func (s *Store) UpdateTemplate(ctx context.Context, t RecordTemplate) error {
	res := s.conn(ctx).Model(&templateRow{}).Where("id = ?", t.ID).
		Updates(map[string]any{"name": t.Name, "sets": encodeJSON(specs(t.Sets)), "updated_at": t.UpdatedAt})
	if res.Error != nil {
		return mapErr(res.Error, "template "+t.Name)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("template")
	}
	return nil
}

// DeleteTemplate deletes a template (sets applied from it stay).
func (s *Store) DeleteTemplate(ctx context.Context, id string) error {
	res := s.conn(ctx).Where("id = ?", id).Delete(&templateRow{})
	if res.Error != nil {
		return mapErr(res.Error, "template")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("template")
	}
	return nil
}

func groupFromRow(r syncGroupRow) (SyncGroup, error) {
	g := SyncGroup{ID: r.ID, Name: r.Name, Priority: r.Priority, OwnerID: r.OwnerID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := decodeJSON(r.Sets, "sync group "+r.ID, &g.Sets); err != nil {
		return SyncGroup{}, err
	}
	g.Sets = specs(g.Sets)
	return g, nil
}

// CreateSyncGroup inserts a sync group; a taken name is a conflict.
func (s *Store) CreateSyncGroup(ctx context.Context, g SyncGroup) error {
	return mapErr(s.conn(ctx).Create(&syncGroupRow{ID: g.ID, Name: g.Name, Priority: g.Priority, OwnerID: g.OwnerID,
		Sets: encodeJSON(specs(g.Sets)), CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt}).Error, "sync group "+g.Name)
}

// GetSyncGroup returns a sync group or a not-found error; lock takes a row
// lock on PostgreSQL so two updates of one group serialise.
func (s *Store) GetSyncGroup(ctx context.Context, id string, lock bool) (SyncGroup, error) {
	var rows []syncGroupRow
	q := "SELECT * FROM sync_groups WHERE id = ?"
	if lock && s.dialect == Postgres {
		q += " FOR UPDATE"
	}
	if err := s.conn(ctx).Raw(q, id).Scan(&rows).Error; err != nil {
		return SyncGroup{}, fmt.Errorf("store: get sync group: %w", err)
	}
	if len(rows) == 0 {
		return SyncGroup{}, domain.NotFound("sync group")
	}
	return groupFromRow(rows[0])
}

// ListSyncGroups returns every sync group (ownerID "") or those of one
// owner, by priority then name.
func (s *Store) ListSyncGroups(ctx context.Context, ownerID string) ([]SyncGroup, error) {
	var rows []syncGroupRow
	q := s.conn(ctx).Order("priority, name")
	if ownerID != "" {
		q = q.Where("owner_id = ?", ownerID)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list sync groups: %w", err)
	}
	out := make([]SyncGroup, 0, len(rows))
	for _, r := range rows {
		g, err := groupFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// SetSyncGroupSets replaces a sync group's sets.
func (s *Store) SetSyncGroupSets(ctx context.Context, id string, sets []SetSpec, now time.Time) error {
	res := s.conn(ctx).Model(&syncGroupRow{}).Where("id = ?", id).
		Updates(map[string]any{"sets": encodeJSON(specs(sets)), "updated_at": now})
	if res.Error != nil {
		return mapErr(res.Error, "sync group")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("sync group")
	}
	return nil
}

// DeleteSyncGroup deletes a sync group and its memberships.
func (s *Store) DeleteSyncGroup(ctx context.Context, id string) error {
	res := s.conn(ctx).Where("id = ?", id).Delete(&syncGroupRow{})
	if res.Error != nil {
		return mapErr(res.Error, "sync group")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("sync group")
	}
	return nil
}

// SyncGroupPriorities returns the priorities of the given groups; unknown
// ids are left out.
func (s *Store) SyncGroupPriorities(ctx context.Context, ids []string) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	for chunk := range chunks(ids) {
		var rows []syncGroupRow
		if err := s.conn(ctx).Select("id", "priority").Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("store: sync group priorities: %w", err)
		}
		for _, r := range rows {
			out[r.ID] = r.Priority
		}
	}
	return out, nil
}

// AddSyncGroupMember makes a zone a member; an existing membership is a conflict.
func (s *Store) AddSyncGroupMember(ctx context.Context, groupID, zoneID string, now time.Time) error {
	return mapErr(s.conn(ctx).Create(&syncGroupMemberRow{GroupID: groupID, ZoneID: zoneID, CreatedAt: now}).Error,
		"sync group member")
}

// AddSyncGroupMembers adds many member zones at once, ignoring existing ones.
func (s *Store) AddSyncGroupMembers(ctx context.Context, groupID string, zoneIDs []string, now time.Time) error {
	rows := make([]syncGroupMemberRow, len(zoneIDs))
	for i, z := range zoneIDs {
		rows[i] = syncGroupMemberRow{GroupID: groupID, ZoneID: z, CreatedAt: now}
	}
	if len(rows) == 0 {
		return nil
	}
	return mapErr(s.conn(ctx).CreateInBatches(rows, inChunk/2).Error, "sync group member")
}

// RemoveSyncGroupMember removes a zone from a group.
func (s *Store) RemoveSyncGroupMember(ctx context.Context, groupID, zoneID string) error {
	res := s.conn(ctx).Where("group_id = ? AND zone_id = ?", groupID, zoneID).Delete(&syncGroupMemberRow{})
	if res.Error != nil {
		return mapErr(res.Error, "sync group member")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("sync group member")
	}
	return nil
}

// SyncGroupZoneIDs returns a group's member zones, sorted.
func (s *Store) SyncGroupZoneIDs(ctx context.Context, groupID string) ([]string, error) {
	var ids []string
	err := s.conn(ctx).Model(&syncGroupMemberRow{}).Where("group_id = ?", groupID).Order("zone_id").Pluck("zone_id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("store: sync group members: %w", err)
	}
	return ids, nil
}

func sourceFromRow(r sourceHostRow) (SourceHost, error) {
	h := SourceHost{ID: r.ID, ProjectID: r.ProjectID, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := decodeJSON(r.IPv4, "source host "+r.ID, &h.IPv4); err != nil {
		return SourceHost{}, err
	}
	if err := decodeJSON(r.IPv6, "source host "+r.ID, &h.IPv6); err != nil {
		return SourceHost{}, err
	}
	h.IPv4, h.IPv6 = strs(h.IPv4), strs(h.IPv6)
	return h, nil
}

// CreateSourceHost inserts a source host; a taken name in the project is a conflict.
func (s *Store) CreateSourceHost(ctx context.Context, h SourceHost) error {
	return mapErr(s.conn(ctx).Create(&sourceHostRow{ID: h.ID, ProjectID: h.ProjectID, Name: h.Name,
		IPv4: encodeJSON(strs(h.IPv4)), IPv6: encodeJSON(strs(h.IPv6)), CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt}).Error,
		"source host "+h.Name)
}

// GetSourceHost returns a source host or a not-found error; lock takes a
// row lock on PostgreSQL so two updates of one source serialise.
func (s *Store) GetSourceHost(ctx context.Context, id string, lock bool) (SourceHost, error) {
	var rows []sourceHostRow
	q := "SELECT * FROM source_hosts WHERE id = ?"
	if lock && s.dialect == Postgres {
		q += " FOR UPDATE"
	}
	if err := s.conn(ctx).Raw(q, id).Scan(&rows).Error; err != nil {
		return SourceHost{}, fmt.Errorf("store: get source host: %w", err)
	}
	if len(rows) == 0 {
		return SourceHost{}, domain.NotFound("source host")
	}
	return sourceFromRow(rows[0])
}

// ListSourceHosts returns a project's source hosts by name.
func (s *Store) ListSourceHosts(ctx context.Context, projectID string) ([]SourceHost, error) {
	var rows []sourceHostRow
	if err := s.conn(ctx).Where("project_id = ?", projectID).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list source hosts: %w", err)
	}
	out := make([]SourceHost, 0, len(rows))
	for _, r := range rows {
		h, err := sourceFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// UpdateSourceHost saves a source host's name and addresses.
func (s *Store) UpdateSourceHost(ctx context.Context, h SourceHost) error {
	res := s.conn(ctx).Model(&sourceHostRow{}).Where("id = ?", h.ID).Updates(map[string]any{
		"name": h.Name, "ipv4": encodeJSON(strs(h.IPv4)), "ipv6": encodeJSON(strs(h.IPv6)), "updated_at": h.UpdatedAt})
	if res.Error != nil {
		return mapErr(res.Error, "source host "+h.Name)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("source host")
	}
	return nil
}

// DeleteSourceHost deletes a source host.
func (s *Store) DeleteSourceHost(ctx context.Context, id string) error {
	res := s.conn(ctx).Where("id = ?", id).Delete(&sourceHostRow{})
	if res.Error != nil {
		return mapErr(res.Error, "source host")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("source host")
	}
	return nil
}
