package recordsvc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// openStore opens a migrated store on db.
func openStore(t testing.TB, db testutil.DB) *store.Store {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), store.Options{URL: db.URL, DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.Migrate(context.Background()))
	kr, _, err := st.ResolveMasterKey(context.Background(), dir)
	require.NoError(t, err)
	st.SetKeyring(kr)
	return st
}

// addUser inserts a login user directly (the identity area owns user
// creation; this keeps the records tests independent of it) and returns a
// principal for it.
func addUser(t testing.TB, st *store.Store, name string, admin bool) *domain.Principal {
	t.Helper()
	sqlDB, err := st.SQL()
	require.NoError(t, err)
	id := uuid.NewString()
	q := "INSERT INTO users (id, username, is_system, active, totp_enabled, totp_last_step, created_at, updated_at) VALUES (?, ?, false, true, false, 0, ?, ?)"
	if st.Dialect() == store.Postgres {
		q = "INSERT INTO users (id, username, is_system, active, totp_enabled, totp_last_step, created_at, updated_at) VALUES ($1, $2, false, true, false, 0, $3, $4)"
	}
	now := time.Now().UTC()
	_, err = sqlDB.Exec(q, id, name, now, now)
	require.NoError(t, err)
	p := &domain.Principal{UserID: id, Username: name, Method: domain.AuthSession}
	if admin {
		p.Roles = []string{domain.RoleAdmin}
	}
	return p
}

// fixture is a project with an owner, an editor, a viewer, a stranger
// (signed in, not a member) and an LCM admin (not a member either).
type fixture struct {
	svc                                    *Service
	st                                     *store.Store
	owner, editor, viewer, stranger, admin *domain.Principal
	project                                store.Project
	changed                                [][]string // zone ids passed to OnChange
}

func newFixture(t testing.TB, db testutil.DB) *fixture {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, db)
	f := &fixture{svc: New(st), st: st}
	f.svc.OnChange(func(_ context.Context, ids []string) { f.changed = append(f.changed, ids) })
	f.owner = addUser(t, st, "owner", false)
	f.editor = addUser(t, st, "editor", false)
	f.viewer = addUser(t, st, "viewer", false)
	f.stranger = addUser(t, st, "stranger", false)
	f.admin = addUser(t, st, "root", true)
	var err error
	f.project, err = f.svc.CreateProject(ctx, f.owner, ProjectInput{Name: "web"})
	require.NoError(t, err)
	_, err = f.svc.AddMember(ctx, f.owner, f.project.ID, MemberInput{UserID: f.editor.UserID, Role: RoleEditor})
	require.NoError(t, err)
	_, err = f.svc.AddMember(ctx, f.owner, f.project.ID, MemberInput{UserID: f.viewer.UserID, Role: RoleViewer})
	require.NoError(t, err)
	return f
}

func strp(s string) *string { return &s }

// zone creates a zone whose primary lies outside it, so named-checkzone
// needs no glue.
func (f *fixture) zone(t testing.TB, projectID, name string) store.DNSZone {
	t.Helper()
	z, err := f.svc.CreateZone(context.Background(), f.owner, projectID, ZoneInput{Name: name,
		MName: strp("ns1.lcm-dns.example.net."), RName: strp("hostmaster@" + name)})
	require.NoError(t, err)
	return z
}

func (f *fixture) sets(t testing.TB, zoneID string) map[string]store.ZoneRecordSet {
	t.Helper()
	rows, err := f.st.ListRecordSets(context.Background(), zoneID)
	require.NoError(t, err)
	out := map[string]store.ZoneRecordSet{}
	for _, r := range rows {
		out[r.Name+" "+r.Type] = r
	}
	return out
}

func (f *fixture) serial(t testing.TB, zoneID string) uint32 {
	t.Helper()
	z, err := f.st.GetZone(context.Background(), zoneID)
	require.NoError(t, err)
	return z.Serial
}

func rs(name, typ string, recs ...string) records.RecordSet {
	return records.RecordSet{Name: name, Type: typ, Records: recs}
}

// eachDB runs fn on SQLite and PostgreSQL.
func eachDB(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) { fn(t, newFixture(t, db)) })
	}
}

func kindOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case isKind(err, domain.ErrNotFound):
		return "404"
	case isKind(err, domain.ErrForbidden):
		return "403"
	case isKind(err, domain.ErrInvalid):
		return "400"
	case isKind(err, domain.ErrConflict):
		return "409"
	case isKind(err, domain.ErrUnauthenticated):
		return "401"
	}
	return fmt.Sprintf("other: %v", err)
}
