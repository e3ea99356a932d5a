package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// ServerSecrets are a server's stored credentials. They leave the store
// only towards the credential responder, which seals them to a worker.
type ServerSecrets struct {
	BootstrapUser     string
	BootstrapKey      string
	BootstrapPassword string
	Username          string
	PrivateKey        string
	PendingKey        string
	LoginPassword     string
	CredVersion       int64
}

// NewServer is what CreateServer stores.
type NewServer struct {
	Server  domain.Server
	Secrets ServerSecrets
}

// ServerFilter selects servers in a listing.
type ServerFilter struct {
	// Q matches the whole name, case-insensitively, through the blind index.
	Q       string
	GroupID string
	Status  domain.ServerStatus
}

// CreateServer stores a new server (its ID is assigned when empty) and
// its group memberships, in one transaction.
func (s *Store) CreateServer(ctx context.Context, n NewServer) (domain.Server, error) {
	srv := n.Server
	if srv.ID == "" {
		srv.ID = uuid.NewString()
	}
	now := time.Now().UTC()
	row := serverRow{
		ID: srv.ID, Name: srv.Name, NameBidx: s.BlindIndex(colServerName, srv.Name), Host: srv.Host,
		Port: srv.Port, Transport: srv.Transport, Segment: srv.Segment, Status: string(srv.Status),
		AuthMethod: srv.AuthMethod, Username: n.Secrets.Username, PrivateKey: n.Secrets.PrivateKey,
		PendingKey: n.Secrets.PendingKey, LoginPassword: n.Secrets.LoginPassword,
		BootstrapUser: n.Secrets.BootstrapUser, BootstrapKey: n.Secrets.BootstrapKey,
		BootstrapPassword: n.Secrets.BootstrapPassword, HostKey: srv.HostKey, HostKeyFP: srv.HostKeyFingerprint,
		CredVersion: 1, Joined: srv.Joined, PkgFamily: srv.PackageFamily, CreatedAt: now, UpdatedAt: now,
	}
	err := s.InTx(ctx, func(tx *Store) error {
		if err := mapErr(tx.conn(ctx).Create(&row).Error, "server "+srv.Name); err != nil {
			return err
		}
		for _, gid := range srv.GroupIDs {
			if err := tx.addGroupServer(ctx, gid, srv.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return domain.Server{}, err
	}
	return s.GetServer(ctx, SystemScope, srv.ID)
}

// GetServer returns one server visible in sc; invisible servers are
// reported as not found so their existence does not leak.
func (s *Store) GetServer(ctx context.Context, sc Scope, id string) (domain.Server, error) {
	var row serverRow
	q := applyServerScope(s.conn(ctx).Model(&serverRow{}), "id", sc)
	if err := q.Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Server{}, mapErr(err, "server")
	}
	out, err := s.decorateServers(ctx, []serverRow{row})
	if err != nil {
		return domain.Server{}, err
	}
	return out[0], nil
}

// ListServers returns the servers visible in sc, by name.
func (s *Store) ListServers(ctx context.Context, sc Scope, f ServerFilter) ([]domain.Server, error) {
	q := applyServerScope(s.conn(ctx).Model(&serverRow{}), "id", sc)
	if f.Q != "" {
		q = q.Where("name_bidx = ?", s.BlindIndex(colServerName, f.Q))
	}
	if f.GroupID != "" {
		q = q.Where("id IN (SELECT server_id FROM group_servers WHERE group_id = ?)", f.GroupID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	var rows []serverRow
	// The credentials are never listed: skip reading and decrypting them.
	if err := q.Omit(serverSecretCols...).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "servers")
	}
	out, err := s.decorateServers(ctx, rows)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b domain.Server) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// ServersByID returns the servers among ids that are visible in sc (ids
// that are gone or invisible are absent), in no particular order. At most
// decorateInMax ids.
func (s *Store) ServersByID(ctx context.Context, sc Scope, ids []string) ([]domain.Server, error) {
	if len(ids) > decorateInMax {
		return nil, fmt.Errorf("store: ServersByID: %d ids, at most %d", len(ids), decorateInMax)
	}
	if len(ids) == 0 {
		return []domain.Server{}, nil
	}
	var rows []serverRow
	q := applyServerScope(s.conn(ctx).Model(&serverRow{}), "id", sc)
	if err := q.Where("id IN ?", ids).Omit(serverSecretCols...).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "servers")
	}
	return s.decorateServers(ctx, rows)
}

// decorateInMax is the longest server list decorateServers filters with
// IN (ids); longer lists read every link and active job.
const decorateInMax = 500

// serverSecretCols are the encrypted credential columns of servers.
var serverSecretCols = []string{"private_key", "pending_key", "login_password", "bootstrap_key", "bootstrap_password"}

// decorateServers converts rows and adds group ids and the active job.
func (s *Store) decorateServers(ctx context.Context, rows []serverRow) ([]domain.Server, error) {
	if len(rows) == 0 {
		return []domain.Server{}, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	// A long list (an admin's whole fleet) reads all group links and active
	// jobs and filters here: binding thousands of IN parameters costs more
	// (quadratic in the SQLite driver) than reading the few extra rows.
	links := s.conn(ctx).Select("group_id", "server_id")
	jobsQ := s.conn(ctx).Select("id", "server_id").Where("status IN ?", activeStatuses())
	if len(ids) <= decorateInMax {
		links, jobsQ = links.Where("server_id IN ?", ids), jobsQ.Where("server_id IN ?", ids)
	}
	groups := make(map[string][]string, len(rows))
	for _, id := range ids {
		groups[id] = nil
	}
	var linkRows []groupServerRow
	if err := links.Order("group_id").Find(&linkRows).Error; err != nil {
		return nil, mapErr(err, "server groups")
	}
	for _, l := range linkRows {
		if g, ok := groups[l.ServerID]; ok {
			groups[l.ServerID] = append(g, l.GroupID)
		}
	}
	active := map[string]string{}
	var jobs []jobRow
	if err := jobsQ.Find(&jobs).Error; err != nil {
		return nil, mapErr(err, "jobs")
	}
	for _, j := range jobs {
		active[j.ServerID] = j.ID
	}
	out := make([]domain.Server, len(rows))
	for i, r := range rows {
		out[i] = serverFromRow(r)
		out[i].GroupIDs = groups[r.ID]
		if out[i].GroupIDs == nil {
			out[i].GroupIDs = []string{}
		}
		out[i].ActiveJobID = active[r.ID]
	}
	if err := s.addAgents(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ActiveJobIDs maps every server visible in sc that has a pending, started
// or running job to that job's id (one index range on jobs.status).
func (s *Store) ActiveJobIDs(ctx context.Context, sc Scope) (map[string]string, error) {
	var rows []jobRow
	q := applyServerScope(s.conn(ctx).Select("id", "server_id"), "server_id", sc)
	if err := q.Where("status IN ?", activeStatuses()).Find(&rows).Error; err != nil {
		return nil, mapErr(err, "jobs")
	}
	out := make(map[string]string, len(rows))
	for _, j := range rows {
		out[j.ServerID] = j.ID
	}
	return out, nil
}

func activeStatuses() []string {
	return []string{string(domain.JobPending), string(domain.JobStarted), string(domain.JobRunning)}
}

func serverFromRow(r serverRow) domain.Server {
	return domain.Server{
		ID: r.ID, Name: r.Name, Host: r.Host, Port: r.Port, Transport: r.Transport, Segment: r.Segment,
		Status: domain.ServerStatus(r.Status), Joined: r.Joined, HostKey: r.HostKey, HostKeyFingerprint: r.HostKeyFP,
		AuthMethod: r.AuthMethod, OSName: r.OSName, OSVersion: r.OSVersion, Kernel: r.Kernel,
		Virtualization: r.Virtualization, Hostname: r.Hostname, PackageFamily: r.PkgFamily,
		RebootRequired: r.RebootRequired, UpdatesAvail: r.UpdatesAvail, SecurityAvail: r.SecurityAvail,
		SSHHardened: r.SSHHardened, LastSeenAt: r.LastSeenAt, CreatedAt: r.CreatedAt,
		Hardening: hardeningFromRow(r),
	}
}

// ServerSettings are the changeable settings; nil fields stay as they are.
type ServerSettings struct {
	Name    *string
	Port    *int
	Segment *string
}

// UpdateServerSettings changes a visible server's settings.
func (s *Store) UpdateServerSettings(ctx context.Context, sc Scope, id string, set ServerSettings) (domain.Server, error) {
	err := s.InTx(ctx, func(tx *Store) error {
		var row serverRow
		q := applyServerScope(tx.conn(ctx).Model(&serverRow{}), "id", sc)
		if err := q.Where("id = ?", id).Take(&row).Error; err != nil {
			return mapErr(err, "server")
		}
		cols := []string{"updated_at"}
		row.UpdatedAt = time.Now().UTC()
		if set.Name != nil {
			row.Name, row.NameBidx = *set.Name, tx.BlindIndex(colServerName, *set.Name)
			cols = append(cols, "name", "name_bidx")
		}
		if set.Port != nil {
			row.Port = *set.Port
			cols = append(cols, "port")
		}
		if set.Segment != nil {
			row.Segment = *set.Segment
			cols = append(cols, "segment")
		}
		return mapErr(tx.conn(ctx).Model(&serverRow{ID: id}).Select(cols).Updates(&row).Error, "server")
	})
	if err != nil {
		return domain.Server{}, err
	}
	return s.GetServer(ctx, sc, id)
}

// ServerSecretsOf returns a server and its credentials (system use only:
// the credential responder and the fleet service).
func (s *Store) ServerSecretsOf(ctx context.Context, id string) (domain.Server, ServerSecrets, error) {
	var row serverRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Server{}, ServerSecrets{}, mapErr(err, "server")
	}
	return serverFromRow(row), secretsFromRow(row), nil
}

// secretsFromRow picks a server row's credentials.
func secretsFromRow(row serverRow) ServerSecrets {
	return ServerSecrets{
		BootstrapUser: row.BootstrapUser, BootstrapKey: row.BootstrapKey, BootstrapPassword: row.BootstrapPassword,
		Username: row.Username, PrivateKey: row.PrivateKey, PendingKey: row.PendingKey,
		LoginPassword: row.LoginPassword, CredVersion: row.CredVersion,
	}
}

// SetPendingKey stores a freshly generated key for a join or rotation.
func (s *Store) SetPendingKey(ctx context.Context, id, pem string) error {
	row := serverRow{PendingKey: pem, UpdatedAt: time.Now().UTC()}
	return s.updateServer(ctx, id, &row, "pending_key", "updated_at")
}

// PromotePendingKey makes the proven pending key the management key, wipes
// the bootstrap credentials and bumps the credential version. It is a
// no-op when no key is pending (idempotent for redelivered events).
func (s *Store) PromotePendingKey(ctx context.Context, id string, joined bool) error {
	return s.InTx(ctx, func(tx *Store) error {
		_, sec, err := tx.ServerSecretsOf(ctx, id)
		if err != nil || sec.PendingKey == "" {
			return err
		}
		row := serverRow{PrivateKey: sec.PendingKey, Username: domain.ManagementUser, Joined: joined,
			CredVersion: sec.CredVersion + 1, UpdatedAt: time.Now().UTC()}
		return tx.updateServer(ctx, id, &row, "private_key", "pending_key", "bootstrap_key", "bootstrap_password",
			"username", "joined", "cred_version", "updated_at")
	})
}

// DropPendingKey forgets a pending key whose proof failed.
func (s *Store) DropPendingKey(ctx context.Context, id string) error {
	return s.updateServer(ctx, id, &serverRow{UpdatedAt: time.Now().UTC()}, "pending_key", "updated_at")
}

// BumpCredVersion makes every worker pool drop its connections to a server.
func (s *Store) BumpCredVersion(ctx context.Context, id string) error {
	res := s.conn(ctx).Model(&serverRow{}).Where("id = ?", id).
		UpdateColumn("cred_version", gorm.Expr("cred_version + 1"))
	if res.Error != nil {
		return mapErr(res.Error, "server")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("server")
	}
	return nil
}

// ServerFacts is what a connectivity check or join learned.
type ServerFacts struct {
	OSName, OSVersion, Kernel, Virtualization, Hostname, PkgFamily string
}

// RecordServerFacts stores facts and marks the server seen; the traffic
// light is package status's (SaveStatus).
func (s *Store) RecordServerFacts(ctx context.Context, id string, f ServerFacts) error {
	now := time.Now().UTC()
	row := serverRow{OSName: f.OSName, OSVersion: f.OSVersion, Kernel: f.Kernel, Virtualization: f.Virtualization,
		Hostname: f.Hostname, PkgFamily: f.PkgFamily, LastSeenAt: &now, UpdatedAt: now}
	return s.updateServer(ctx, id, &row, "os_name", "os_version", "kernel", "virtualization", "hostname",
		"pkg_family", "last_seen_at", "updated_at")
}

func (s *Store) updateServer(ctx context.Context, id string, row *serverRow, cols ...string) error {
	res := s.conn(ctx).Model(&serverRow{ID: id}).Select(cols).Updates(row)
	if res.Error != nil {
		return mapErr(res.Error, "server")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("server")
	}
	return nil
}

// DeleteServer removes a server and its group memberships; its job history
// stays.
func (s *Store) DeleteServer(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.conn(ctx).Where("server_id = ?", id).Delete(&groupServerRow{}).Error; err != nil {
			return mapErr(err, "server")
		}
		if err := tx.conn(ctx).Where("server_id = ?", id).Delete(&agentRow{}).Error; err != nil {
			return mapErr(err, "server agent")
		}
		res := tx.conn(ctx).Where("id = ?", id).Delete(&serverRow{})
		if res.Error != nil {
			return mapErr(res.Error, "server")
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("server")
		}
		return nil
	})
}

// ServerSegment is the worker segment a server's jobs go to: its own, else
// the first of its groups (by name) that names one, else the default.
func (s *Store) ServerSegment(ctx context.Context, id string) (string, error) {
	var row serverRow
	if err := s.conn(ctx).Select("id", "segment").Where("id = ?", id).Take(&row).Error; err != nil {
		return "", mapErr(err, "server")
	}
	if row.Segment != "" {
		return row.Segment, nil
	}
	var seg []string
	err := s.conn(ctx).Model(&groupRow{}).
		Where("segment <> '' AND id IN (SELECT group_id FROM group_servers WHERE server_id = ?)", id).
		Order("name").Limit(1).Pluck("segment", &seg).Error
	if err != nil {
		return "", fmt.Errorf("store: server segment: %w", err)
	}
	if len(seg) > 0 {
		return seg[0], nil
	}
	return domain.DefaultSegment, nil
}
