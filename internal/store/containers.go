package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// ContainerInventory is a server's stored container inventory. Data,
// Outcome and Updates are JSON owned by the containers service.
type ContainerInventory struct {
	ServerID         string
	Data             []byte
	RefreshedAt      time.Time
	JobID            string
	Outcome          []byte
	Updates          []byte
	UpdatesCheckedAt *time.Time
}

func (r containerInventoryRow) out() ContainerInventory {
	return ContainerInventory{ServerID: r.ServerID, Data: []byte(r.Data), RefreshedAt: r.RefreshedAt, JobID: r.JobID,
		Outcome: []byte(r.Outcome), Updates: []byte(r.Updates), UpdatesCheckedAt: r.UpdatesCheckedAt}
}

// SetContainerInventory stores a server's inventory read by a container
// job or a refresh job (replacing the previous one; the update answers are
// kept). A nil Outcome keeps the stored one: a refresh job is no container
// action, the last action's outcome stays on the server page.
func (s *Store) SetContainerInventory(ctx context.Context, inv ContainerInventory) error {
	row := containerInventoryRow{ServerID: inv.ServerID, Data: string(inv.Data), RefreshedAt: inv.RefreshedAt.UTC(), JobID: inv.JobID, Outcome: string(inv.Outcome)}
	cols := []string{"data", "refreshed_at", "job_id", "outcome"}
	if inv.Outcome == nil {
		cols = cols[:3]
	}
	err := s.conn(ctx).Omit("Server").Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "server_id"}},
		DoUpdates: clause.AssignmentColumns(cols)}).Create(&row).Error
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return domain.NotFound("server")
	}
	return mapErr(err, "container inventory")
}

// SetContainerOutcome stores the outcome of a container job that could
// not read the inventory (the inventory stays as it was).
func (s *Store) SetContainerOutcome(ctx context.Context, serverID, jobID string, outcome []byte) error {
	res := s.conn(ctx).Model(&containerInventoryRow{}).Where("server_id = ?", serverID).
		Updates(map[string]any{"outcome": string(outcome), "job_id": jobID})
	if res.Error != nil {
		return mapErr(res.Error, "container inventory")
	}
	if res.RowsAffected == 0 {
		return s.SetContainerInventory(ctx, ContainerInventory{ServerID: serverID, Data: []byte("{}"), RefreshedAt: time.Unix(0, 0), JobID: jobID, Outcome: outcome})
	}
	return nil
}

// SetContainerUpdates stores the newer-image check's answers.
func (s *Store) SetContainerUpdates(ctx context.Context, serverID string, updates []byte, at time.Time) error {
	at = at.UTC()
	res := s.conn(ctx).Model(&containerInventoryRow{}).Where("server_id = ?", serverID).
		Updates(map[string]any{"updates": string(updates), "updates_checked_at": &at})
	if res.Error != nil {
		return mapErr(res.Error, "container inventory")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("container inventory")
	}
	return nil
}

// GetContainerInventory returns a server's inventory (not found: never
// collected). The caller checked the server's visibility.
func (s *Store) GetContainerInventory(ctx context.Context, serverID string) (ContainerInventory, error) {
	var row containerInventoryRow
	if err := s.conn(ctx).Where("server_id = ?", serverID).Take(&row).Error; err != nil {
		return ContainerInventory{}, mapErr(err, "container inventory")
	}
	return row.out(), nil
}

// ContainerInventoryServers returns which of ids have a stored container
// inventory (one query: the refresh ingest asks it for the servers whose
// refresh found no engine).
func (s *Store) ContainerInventoryServers(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	var have []string
	if err := s.conn(ctx).Model(&containerInventoryRow{}).Where("server_id IN ?", ids).Pluck("server_id", &have).Error; err != nil {
		return nil, mapErr(err, "container inventories")
	}
	for _, id := range have {
		out[id] = true
	}
	return out, nil
}

// ListContainerInventories returns the inventories of the servers visible
// in sc.
func (s *Store) ListContainerInventories(ctx context.Context, sc Scope) ([]ContainerInventory, error) {
	var rows []containerInventoryRow
	q := applyServerScope(s.conn(ctx).Model(&containerInventoryRow{}), "server_id", sc)
	if err := q.Order("server_id").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "container inventories")
	}
	out := make([]ContainerInventory, len(rows))
	for i, r := range rows {
		out[i] = r.out()
	}
	return out, nil
}

// ContainerCVEMark is a container marked CVE-relevant.
type ContainerCVEMark struct {
	ServerID  string
	Engine    string
	Container string
	MarkedBy  string
	MarkedAt  time.Time
}

// SetContainerCVERelevance marks (relevant) or unmarks a container.
func (s *Store) SetContainerCVERelevance(ctx context.Context, m ContainerCVEMark, relevant bool) error {
	if !relevant {
		return mapErr(s.conn(ctx).Where("server_id = ? AND engine = ? AND container = ?", m.ServerID, m.Engine, m.Container).
			Delete(&containerCVEMarkRow{}).Error, "cve mark")
	}
	row := containerCVEMarkRow{ServerID: m.ServerID, Engine: m.Engine, Container: m.Container, MarkedBy: m.MarkedBy, MarkedAt: m.MarkedAt.UTC()}
	err := s.conn(ctx).Omit("Server").Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return domain.NotFound("server")
	}
	return mapErr(err, "cve mark")
}

// ContainerCVEMarks lists the marks of the servers visible in sc (serverID
// empty) or of one server.
func (s *Store) ContainerCVEMarks(ctx context.Context, sc Scope, serverID string) ([]ContainerCVEMark, error) {
	var rows []containerCVEMarkRow
	q := applyServerScope(s.conn(ctx).Model(&containerCVEMarkRow{}), "server_id", sc)
	if serverID != "" {
		q = q.Where("server_id = ?", serverID)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, mapErr(err, "cve marks")
	}
	out := make([]ContainerCVEMark, len(rows))
	for i, r := range rows {
		out[i] = ContainerCVEMark{ServerID: r.ServerID, Engine: r.Engine, Container: r.Container, MarkedBy: r.MarkedBy, MarkedAt: r.MarkedAt}
	}
	return out, nil
}
