package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// RecordFirewall stores a firewall state read back on a server: the rules
// in server_firewall, active and tool on the server row (the list, the
// status and the overview read them there).
func (s *Store) RecordFirewall(ctx context.Context, id, tool string, active bool, rules []byte, at time.Time) error {
	at = at.UTC()
	if len(rules) == 0 {
		rules = []byte("[]")
	}
	return s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		row := serverFirewallRow{ServerID: id, Tool: tool, Active: active, Rules: string(rules), CheckedAt: &at, Ports: "[]"}
		if err := tx.Omit("Server").Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "server_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"tool", "active", "rules", "checked_at"}),
		}).Create(&row).Error; err != nil {
			return mapErr(err, "server firewall")
		}
		res := tx.Model(&serverRow{}).Where("id = ?", id).Updates(map[string]any{
			"firewall_active": active, "firewall_tool": tool, "firewall_at": &at, "updated_at": time.Now().UTC()})
		if res.Error != nil {
			return mapErr(res.Error, "server")
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("server")
		}
		return nil
	})
}

// RecordListening stores a listening-ports scan of a server.
func (s *Store) RecordListening(ctx context.Context, id string, ports []byte, at time.Time) error {
	at = at.UTC()
	if len(ports) == 0 {
		ports = []byte("[]")
	}
	row := serverFirewallRow{ServerID: id, Rules: "[]", Ports: string(ports), ScannedAt: &at}
	return mapErr(s.conn(ctx).Omit("Server").Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "server_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"ports", "scanned_at"}),
	}).Create(&row).Error, "server firewall")
}

// GetFirewall returns what LCM last read about a visible server's
// firewall and listening ports (empty when never checked).
func (s *Store) GetFirewall(ctx context.Context, sc Scope, id string) (domain.FirewallState, error) {
	if _, err := s.GetServer(ctx, sc, id); err != nil {
		return domain.FirewallState{}, err
	}
	out := domain.FirewallState{ServerID: id, RulesJSON: []byte("[]"), PortsJSON: []byte("[]")}
	var row serverFirewallRow
	err := s.conn(ctx).Omit("Server").Where("server_id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return out, nil
	}
	if err != nil {
		return out, mapErr(err, "server firewall")
	}
	out.Tool, out.Active, out.CheckedAt, out.ScannedAt = row.Tool, row.Active, row.CheckedAt, row.ScannedAt
	out.RulesJSON, out.PortsJSON = []byte(row.Rules), []byte(row.Ports)
	return out, nil
}

// --- IP allowlists ---------------------------------------------------------

func allowlistFromRow(r ipAllowlistRow) domain.IPAllowlist {
	a := domain.IPAllowlist{ID: r.ID, Name: r.Name, Description: r.Description, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	_ = json.Unmarshal([]byte(r.Entries), &a.Entries)
	if a.Entries == nil {
		a.Entries = []string{}
	}
	return a
}

// ListIPAllowlists returns every named IP allowlist, by name.
func (s *Store) ListIPAllowlists(ctx context.Context) ([]domain.IPAllowlist, error) {
	var rows []ipAllowlistRow
	if err := s.conn(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "IP allowlists")
	}
	out := make([]domain.IPAllowlist, 0, len(rows))
	for _, r := range rows {
		out = append(out, allowlistFromRow(r))
	}
	return out, nil
}

// GetIPAllowlist returns one allowlist.
func (s *Store) GetIPAllowlist(ctx context.Context, id string) (domain.IPAllowlist, error) {
	var row ipAllowlistRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.IPAllowlist{}, mapErr(err, "IP allowlist")
	}
	return allowlistFromRow(row), nil
}

// CreateIPAllowlist stores a validated allowlist (names are unique).
func (s *Store) CreateIPAllowlist(ctx context.Context, a domain.IPAllowlist) (domain.IPAllowlist, error) {
	entries, _ := json.Marshal(a.Entries)
	now := time.Now().UTC()
	row := ipAllowlistRow{ID: uuid.NewString(), Name: a.Name, Description: a.Description, Entries: string(entries), CreatedAt: now, UpdatedAt: now}
	if err := s.conn(ctx).Create(&row).Error; err != nil {
		return domain.IPAllowlist{}, mapErr(err, "IP allowlist "+a.Name)
	}
	return allowlistFromRow(row), nil
}

// DeleteIPAllowlist removes an allowlist (rules already on servers keep
// their addresses: LCM wrote them there as addresses).
func (s *Store) DeleteIPAllowlist(ctx context.Context, id string) (domain.IPAllowlist, error) {
	a, err := s.GetIPAllowlist(ctx, id)
	if err != nil {
		return a, err
	}
	return a, mapErr(s.conn(ctx).Where("id = ?", id).Delete(&ipAllowlistRow{}).Error, "IP allowlist")
}

// --- fleet overview ------------------------------------------------------------

// HardeningCounts counts servers by their hardening state.
type HardeningCounts struct {
	Total      int `json:"total"`
	Hardened   int `json:"ssh_hardened"`
	Restricted int `json:"sudo_restricted"`
	Firewalled int `json:"firewall_active"`
}

// HardeningGroup is HardeningCounts of one group.
type HardeningGroup struct {
	GroupID   string `json:"group_id"`
	GroupName string `json:"group_name"`
	HardeningCounts
}

// HardeningOverview counts the visible servers that are SSH-hardened, in
// restricted sudo mode and behind an active firewall: all of them, and
// per group (a server in two groups counts in both; servers in no group
// only in the total).
func (s *Store) HardeningOverview(ctx context.Context, sc Scope) (HardeningCounts, []HardeningGroup, error) {
	var rows []serverRow
	q := applyServerScope(s.conn(ctx).Model(&serverRow{}), "id", sc)
	if err := q.Select("id", "ssh_hardened", "sudo_mode", "firewall_active").Find(&rows).Error; err != nil {
		return HardeningCounts{}, nil, mapErr(err, "servers")
	}
	add := func(c *HardeningCounts, r serverRow) {
		c.Total++
		if r.SSHHardened {
			c.Hardened++
		}
		if r.SudoMode == domain.SudoRestricted {
			c.Restricted++
		}
		if r.FirewallActive {
			c.Firewalled++
		}
	}
	var total HardeningCounts
	byID := make(map[string]serverRow, len(rows))
	for _, r := range rows {
		add(&total, r)
		byID[r.ID] = r
	}
	var groups []groupRow
	if err := applyGroupScope(s.conn(ctx).Model(&groupRow{}), "id", sc).Order("name").Find(&groups).Error; err != nil {
		return total, nil, mapErr(err, "groups")
	}
	var links []groupServerRow
	if err := s.conn(ctx).Select("group_id", "server_id").Find(&links).Error; err != nil {
		return total, nil, mapErr(err, "group servers")
	}
	idx := map[string]int{}
	out := make([]HardeningGroup, 0, len(groups))
	for _, g := range groups {
		idx[g.ID] = len(out)
		out = append(out, HardeningGroup{GroupID: g.ID, GroupName: g.Name})
	}
	for _, l := range links {
		i, ok := idx[l.GroupID]
		r, visible := byID[l.ServerID]
		if ok && visible {
			add(&out[i].HardeningCounts, r)
		}
	}
	return total, out, nil
}
