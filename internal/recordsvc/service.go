// Package recordsvc is the records area's service: projects with members
// and roles, zones, record sets, templates, sync groups and source hosts,
// stored through internal/store. Every write runs in one transaction,
// applies the plans of the pure internal/records package, bumps the serial
// of every zone it changed and, after the commit, tells the DNS listener
// (DNS) which zones to rebuild. docs/records.md describes the semantics and
// the access rules.
package recordsvc

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/dnsserver"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/store"
)

// Project roles, weakest first.
const (
	RoleViewer = "viewer"
	RoleEditor = "editor"
	RoleOwner  = "owner"
)

// rank orders roles; 0 is "no role".
func rank(role string) int {
	switch role {
	case RoleViewer:
		return 1
	case RoleEditor:
		return 2
	case RoleOwner:
		return 3
	}
	return 0
}

// maxNameLen bounds the names of projects, templates, sync groups and
// source hosts (the column size).
const maxNameLen = 128

// Service is the records area's service. Its methods take the caller as a
// *domain.Principal and check the caller's project role themselves.
type Service struct {
	st  *store.Store
	now func() time.Time

	mu        sync.RWMutex
	onChange  []func(ctx context.Context, zoneIDs []string)
	listener  *dnsserver.Server
	axfrAllow []netip.Prefix
}

// New returns a service over st.
func New(st *store.Store) *Service {
	return &Service{st: st, now: func() time.Time { return time.Now().UTC() }}
}

// OnChange registers fn to be called, after the commit, with the ids of the
// zones a successful write changed or deleted. The DNS wiring uses it to
// rebuild those zones and to tell the other replicas.
func (s *Service) OnChange(fn func(ctx context.Context, zoneIDs []string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = append(s.onChange, fn)
}

// changes collects the zones one write touches and their new serials.
type changes struct {
	now     time.Time
	serials map[string]uint32 // zone id → bumped serial (zones still present)
	gone    []string          // deleted zones
}

func (s *Service) newChanges() *changes {
	return &changes{now: s.now(), serials: map[string]uint32{}}
}

// bump records that zone z changed, once per write.
func (c *changes) bump(z store.DNSZone) {
	if _, ok := c.serials[z.ID]; !ok {
		c.serials[z.ID] = records.NextSerial(z.Serial, c.now)
	}
}

// write stores the bumped serials inside the transaction.
func (c *changes) write(ctx context.Context, tx *store.Store) error {
	if len(c.serials) == 0 {
		return nil
	}
	return tx.SetSerials(ctx, c.serials, c.now)
}

// zoneIDs returns every zone the write touched.
func (c *changes) zoneIDs() []string {
	ids := make([]string, 0, len(c.serials)+len(c.gone))
	for id := range c.serials {
		ids = append(ids, id)
	}
	ids = append(ids, c.gone...)
	slices.Sort(ids)
	return ids
}

// write runs fn in one transaction and, after the commit, reports the
// touched zones to the OnChange hooks.
func (s *Service) write(ctx context.Context, fn func(tx *store.Store, c *changes) error) error {
	c := s.newChanges()
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		if err := fn(tx, c); err != nil {
			return err
		}
		return c.write(ctx, tx)
	})
	if err != nil {
		return err
	}
	if ids := c.zoneIDs(); len(ids) > 0 {
		s.mu.RLock()
		hooks := slices.Clone(s.onChange)
		s.mu.RUnlock()
		for _, h := range hooks {
			h(ctx, ids)
		}
	}
	return nil
}

// authenticated refuses anonymous callers.
func authenticated(p *domain.Principal) error {
	if p == nil || p.UserID == "" {
		return &domain.Error{Kind: domain.ErrUnauthenticated, Code: "unauthenticated", Message: "authentication required"}
	}
	return nil
}

// roleIn returns the caller's effective role in a project: LCM admins act
// as owners of every project.
func roleIn(ctx context.Context, st *store.Store, p *domain.Principal, projectID string) (string, error) {
	if p.IsAdmin() {
		return RoleOwner, nil
	}
	return st.MemberRole(ctx, projectID, p.UserID)
}

// authorize checks that the caller holds at least role need in a project.
// A caller who is not a member gets not-found for what (so existence is not
// leaked); a member with a weaker role gets forbidden.
func authorize(ctx context.Context, st *store.Store, p *domain.Principal, projectID, need, what string) error {
	if err := authenticated(p); err != nil {
		return err
	}
	role, err := roleIn(ctx, st, p, projectID)
	if err != nil {
		return err
	}
	switch {
	case role == "":
		return domain.NotFound(what)
	case rank(role) < rank(need):
		return domain.Forbidden("this needs the " + need + " role in the project; you are " + role)
	}
	return nil
}

// zoneFor loads a zone and checks the caller's role in its project.
func zoneFor(ctx context.Context, st *store.Store, p *domain.Principal, zoneID, need string) (store.DNSZone, error) {
	z, err := st.GetZone(ctx, zoneID)
	if err != nil {
		return store.DNSZone{}, err
	}
	if err := authorize(ctx, st, p, z.ProjectID, need, "zone"); err != nil {
		return store.DNSZone{}, err
	}
	return z, nil
}

// lockZone takes the zone's row lock and returns its current row.
func lockZone(ctx context.Context, tx *store.Store, id string) (store.DNSZone, error) {
	zs, err := tx.LockZones(ctx, []string{id})
	if err != nil {
		return store.DNSZone{}, err
	}
	if len(zs) == 0 {
		return store.DNSZone{}, domain.NotFound("zone")
	}
	return zs[0], nil
}

// checkName validates a display name (project, template, group, source).
func checkName(field, name string) (string, error) {
	n := strings.TrimSpace(name)
	switch {
	case n == "":
		return "", domain.Invalid("name_required", field+" is required")
	case utf8.RuneCountInString(n) > maxNameLen || len(n) > 4*maxNameLen:
		return "", domain.Invalid("name_too_long", field+" is longer than 128 characters")
	case strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", domain.Invalid("invalid_name", field+" contains control characters")
	}
	return n, nil
}

func newID() string { return uuid.NewString() }

// zoneOf converts a stored zone to the records package's zone.
func zoneOf(z store.DNSZone) records.Zone {
	return records.Zone{ID: z.ID, ProjectID: z.ProjectID, Name: z.Name, DefaultTTL: z.DefaultTTL, MName: z.MName,
		RName: z.RName, Refresh: z.Refresh, Retry: z.Retry, Expire: z.Expire, Minimum: z.Minimum, Serial: z.Serial}
}

// zoneSetOf converts a stored set to a records.ZoneSet.
func zoneSetOf(r store.ZoneRecordSet) records.ZoneSet {
	kind, _ := records.ParseOriginKind(r.OriginKind)
	return records.ZoneSet{
		RecordSet: records.RecordSet{Name: r.Name, Type: r.Type, TTL: r.TTL, Records: r.Records},
		Origin:    records.Origin{Kind: kind, ID: r.OriginID},
	}
}

func zoneSetsOf(rows []store.ZoneRecordSet) []records.ZoneSet {
	out := make([]records.ZoneSet, len(rows))
	for i, r := range rows {
		out[i] = zoneSetOf(r)
	}
	return out
}

// rowOf converts a planned set to a stored one in zone zoneID.
func rowOf(zoneID string, s records.ZoneSet, now time.Time) store.ZoneRecordSet {
	recs := s.Records
	if recs == nil {
		recs = []string{}
	}
	return store.ZoneRecordSet{ZoneID: zoneID, Name: s.Name, Type: s.Type, TTL: s.TTL, Records: recs,
		OriginKind: s.Origin.Kind.String(), OriginID: s.Origin.ID, UpdatedAt: now}
}

func specsOf(sets []records.RecordSet) []store.SetSpec {
	out := make([]store.SetSpec, len(sets))
	for i, s := range sets {
		out[i] = store.SetSpec{Name: s.Name, Type: s.Type, TTL: s.TTL, Records: s.Records}
	}
	return out
}

func setsOf(specs []store.SetSpec) []records.RecordSet {
	out := make([]records.RecordSet, len(specs))
	for i, s := range specs {
		recs := s.Records
		if recs == nil {
			recs = []string{}
		}
		out[i] = records.RecordSet{Name: s.Name, Type: s.Type, TTL: s.TTL, Records: recs}
	}
	return out
}

// applyPlan writes a plan to zone z: deletes by key, puts by upsert.
func applyPlan(ctx context.Context, tx *store.Store, z store.DNSZone, cur []store.ZoneRecordSet, plan records.Plan, c *changes) error {
	if plan.Empty() {
		return nil
	}
	ids := make(map[records.SetKey]string, len(cur))
	for _, r := range cur {
		ids[records.MakeKey(r.Name, r.Type)] = r.ID
	}
	var del []string
	for _, k := range plan.Delete {
		del = append(del, ids[k])
	}
	if err := tx.DeleteRecordSets(ctx, del); err != nil {
		return err
	}
	puts := make([]store.ZoneRecordSet, len(plan.Put))
	for i, p := range plan.Put {
		puts[i] = rowOf(z.ID, p, c.now)
	}
	if err := tx.PutRecordSets(ctx, puts); err != nil {
		return err
	}
	c.bump(z)
	return nil
}

// desiredFor normalizes template or sync-group sets for zone z; the keys
// of sets that do not fit the zone (a name too long under its origin) are
// returned apart and reported as conflicts.
func desiredFor(z store.DNSZone, sets []records.RecordSet) ([]records.RecordSet, []string) {
	out := make([]records.RecordSet, 0, len(sets))
	var bad []string
	for _, d := range sets {
		n, err := records.NormalizeSet(z.Name, d)
		if err != nil {
			bad = append(bad, string(d.Key()))
			continue
		}
		out = append(out, n)
	}
	return out, bad
}

// appendSorted adds keys to a report list and keeps it in report order.
func appendSorted(list, keys []string) []string {
	if len(keys) == 0 {
		return list
	}
	list = append(list, keys...)
	records.SortKeys(list)
	return list
}
