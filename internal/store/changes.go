package store

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Change tracking for read caches.
//
// Every committed write to a table the server list shows (servers, their
// status, group links, groups) is recorded AFTER its commit: either as a
// change of the servers it touched (when the write says so for certain),
// appended to a bounded log, or as a change of everything (the generation
// moves). A cache built from reads that started after it read version v
// is current for every server not changed since v. Recording after the
// commit means a writer's open transaction cannot be missed by a reader
// that caches under the old version: its commit is recorded afterwards.
//
// Writes are seen through GORM callbacks on every create, update, delete
// and raw statement, so no store method can forget to report a change.
// Transactions must go through InTx to be recorded at their commit; a
// write in any other transaction counts when it executes (only the offline
// migration and key rotation use one, and neither changes what a listing
// shows).
// Other replicas learn of changes over NATS (OnFleetChange,
// NoteFleetChange; a reconnect is TouchFleet).

// fleetTables are the tables the server list (and the MCP view, which
// also shows each server's vulnerability counts) is built from. Jobs are
// not among them: a list reads active jobs on every request. Findings
// change only with a scan, one server at a time (SetFindings).
var fleetTables = map[string]bool{"servers": true, "server_status": true, "group_servers": true, "server_groups": true,
	"server_agents": true, "server_findings": true}

// writeTarget finds the table a raw INSERT, UPDATE or DELETE writes.
var writeTarget = regexp.MustCompile(`(?is)^\s*(?:with\b.*?\)\s*)?(?:insert\s+(?:or\s+\w+\s+)?into|update(?:\s+or\s+\w+)?|delete\s+from)\s+"?(\w+)"?`)

// serverKey names, per fleet table, the column that holds the server id,
// so a write can be attributed to the servers it touched. server_groups
// has none: a group change may touch any number of servers.
var serverKey = map[string]string{"servers": "id", "server_status": "server_id", "group_servers": "server_id",
	"server_agents": "server_id", "server_findings": "server_id"}

// fleetLogSize bounds the remembered per-server changes; a cache that falls
// further behind rebuilds everything.
const fleetLogSize = 8192

// FleetChange is what a committed transaction changed in the fleet
// tables: everything (All) or the listed servers.
type FleetChange struct {
	All       bool     `json:"all,omitempty"`
	ServerIDs []string `json:"server_ids,omitempty"`
}

// FleetVersion is the state of the fleet tables a cache was built from:
// Gen moves with every change that may touch any server, Seq with every
// change of listed servers.
type FleetVersion struct{ Gen, Seq uint64 }

// changes is shared by a Store and every transaction store made from it.
type changes struct {
	mu  sync.Mutex
	gen uint64
	seq uint64
	log [fleetLogSize]loggedChange // ring: change seq is at seq % fleetLogSize
	// open maps a transaction (the GORM connection pool of its statements)
	// to what it changed so far; it counts after the commit.
	open    sync.Map // gorm.ConnPool → *txChanges
	onFleet atomic.Pointer[func(FleetChange)]
}

type loggedChange struct {
	seq uint64
	id  string
}

type txChanges struct {
	mu  sync.Mutex
	all bool
	ids map[string]bool
}

func (t *txChanges) add(all bool, ids []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if all {
		t.all = true
		return
	}
	if t.ids == nil {
		t.ids = map[string]bool{}
	}
	for _, id := range ids {
		t.ids[id] = true
	}
}

func (t *txChanges) change() (FleetChange, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.all:
		return FleetChange{All: true}, true
	case len(t.ids) > 0:
		ids := make([]string, 0, len(t.ids))
		for id := range t.ids {
			ids = append(ids, id)
		}
		return FleetChange{ServerIDs: ids}, true
	}
	return FleetChange{}, false
}

// register hooks the tracker into db's write paths.
func (c *changes) register(db *gorm.DB) error {
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("lcm:changes", c.observe),
		cb.Update().After("gorm:update").Register("lcm:changes", c.observe),
		cb.Delete().After("gorm:delete").Register("lcm:changes", c.observe),
		cb.Raw().After("gorm:raw").Register("lcm:changes", c.observeRaw),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// observe runs after a create, update or delete through a model.
func (c *changes) observe(db *gorm.DB) {
	if db.Error != nil || !fleetTables[db.Statement.Table] {
		return
	}
	ids, ok := writtenServers(db)
	c.wrote(db, !ok, ids)
}

// observeRaw runs after Exec: the table comes from the SQL text, and the
// write may have touched any server.
func (c *changes) observeRaw(db *gorm.DB) {
	if db.Error != nil {
		return
	}
	if m := writeTarget.FindStringSubmatch(db.Statement.SQL.String()); m != nil && fleetTables[strings.ToLower(m[1])] {
		c.wrote(db, true, nil)
	}
}

func (c *changes) wrote(db *gorm.DB, all bool, ids []string) {
	if tx, ok := c.open.Load(db.Statement.ConnPool); ok {
		tx.(*txChanges).add(all, ids)
		return
	}
	c.commit(FleetChange{All: all, ServerIDs: ids}, true) // autocommit: committed
}

// writtenServers finds the servers a model write touched when its shape
// says so for certain: a created row (or rows) with the server id set, or
// an update or delete whose only condition is "<server key> = id" (GORM's
// primary-key condition of Model(&row{ID: id}) included). Anything else —
// scope subqueries, several conditions, a group's rows — is not certain,
// and the caller treats the write as touching every server.
func writtenServers(db *gorm.DB) ([]string, bool) {
	st := db.Statement
	key, ok := serverKey[st.Table]
	if !ok || st.Schema == nil {
		return nil, false
	}
	if _, isCreate := st.Clauses["INSERT"]; isCreate {
		f := st.Schema.LookUpField(key)
		if f == nil {
			return nil, false
		}
		var ids []string
		rv := st.ReflectValue
		switch rv.Kind() {
		case reflect.Struct:
			if v, zero := f.ValueOf(st.Context, rv); !zero {
				ids = append(ids, fmt.Sprint(v))
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < rv.Len(); i++ {
				if v, zero := f.ValueOf(st.Context, reflect.Indirect(rv.Index(i))); !zero {
					ids = append(ids, fmt.Sprint(v))
				}
			}
		}
		return ids, len(ids) > 0
	}
	where, ok := st.Clauses["WHERE"].Expression.(clause.Where)
	if !ok || len(where.Exprs) != 1 {
		return nil, false
	}
	var col string
	var val any
	switch e := where.Exprs[0].(type) {
	case clause.Eq:
		col, val = columnName(e.Column), e.Value
	case clause.IN:
		if len(e.Values) != 1 {
			return nil, false
		}
		col, val = columnName(e.Column), e.Values[0]
	case clause.Expr:
		m := keyCondition.FindStringSubmatch(e.SQL)
		if m == nil || len(e.Vars) != 1 {
			return nil, false
		}
		col, val = m[1], e.Vars[0]
	default:
		return nil, false
	}
	id, isString := val.(string)
	if col != key || !isString || id == "" {
		return nil, false
	}
	return []string{id}, true
}

// keyCondition matches the SQL of Where("<column> = ?", v).
var keyCondition = regexp.MustCompile(`^\s*"?(\w+)"?\s*=\s*\?\s*$`)

func columnName(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case clause.Column:
		return v.Name
	}
	return ""
}

// begin registers a transaction and reports whether it is the outermost
// one (nested InTx calls are savepoints of the same transaction).
func (c *changes) begin(pool gorm.ConnPool) (*txChanges, bool) {
	v, loaded := c.open.LoadOrStore(pool, &txChanges{})
	return v.(*txChanges), !loaded
}

// end forgets a transaction; what a committed one changed counts now.
func (c *changes) end(pool gorm.ConnPool, tx *txChanges, committed bool) {
	c.open.Delete(pool)
	if ch, any := tx.change(); committed && any {
		c.commit(ch, true)
	}
}

// commit records a committed change; local ones are announced.
func (c *changes) commit(ch FleetChange, local bool) {
	c.mu.Lock()
	if ch.All {
		c.gen++
	} else {
		for _, id := range ch.ServerIDs {
			c.seq++
			c.log[c.seq%fleetLogSize] = loggedChange{c.seq, id}
		}
	}
	c.mu.Unlock()
	if fn := c.onFleet.Load(); local && fn != nil {
		(*fn)(ch)
	}
}

// FleetVersion is the current version of the fleet tables. Read it BEFORE
// the reads a cache is built from.
func (s *Store) FleetVersion() FleetVersion {
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	return FleetVersion{Gen: s.changes.gen, Seq: s.changes.seq}
}

// FleetChangesSince returns the current version and the servers changed
// after v. ok is false when a change since v may have touched any server,
// or v is too old for the log: rebuild everything then.
func (s *Store) FleetChangesSince(v FleetVersion) (cur FleetVersion, ids []string, ok bool) {
	c := s.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	cur = FleetVersion{Gen: c.gen, Seq: c.seq}
	if v.Gen != c.gen || v.Seq > c.seq || c.seq-v.Seq > fleetLogSize {
		return cur, nil, false
	}
	seen := map[string]bool{}
	for q := v.Seq + 1; q <= c.seq; q++ {
		e := c.log[q%fleetLogSize]
		if e.seq != q { // overwritten: cannot happen within the bound, kept as a guard
			return cur, nil, false
		}
		if !seen[e.id] {
			seen[e.id] = true
			ids = append(ids, e.id)
		}
	}
	return cur, ids, true
}

// OnFleetChange sets fn to run after every committed local change of the
// fleet tables (the API announces it to the other replicas). fn must not
// block.
func (s *Store) OnFleetChange(fn func(FleetChange)) { s.changes.onFleet.Store(&fn) }

// NoteFleetChange records a change another replica committed.
func (s *Store) NoteFleetChange(ch FleetChange) { s.changes.commit(ch, false) }

// TouchFleet counts as a change of every server: when changes may have
// been missed (a NATS reconnect).
func (s *Store) TouchFleet() { s.changes.commit(FleetChange{All: true}, false) }
