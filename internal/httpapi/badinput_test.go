package httpapi

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// badBodies are the request bodies every operation that takes one must
// refuse with a 4xx, changing nothing.
var badBodies = []struct {
	name string
	body []byte
}{
	{"malformed JSON", []byte(`{"name": `)},
	{"array instead of object", []byte(`[]`)},
	{"string instead of object", []byte(`"x"`)},
	{"number instead of object", []byte(`42`)},
	{"bare null", []byte(`null`)},
	{"30 MiB body", append(append([]byte(`{"name": "`), bytes.Repeat([]byte("a"), 30<<20)...), '"', '}')},
}

// softBodies are well-formed but odd: no 5xx, no hang; a refusal changes
// nothing.
var softBodies = []struct {
	name string
	body []byte
}{
	{"unknown field only", []byte(`{"zzz_unknown_field": 1}`)},
	{"null for every typed field", []byte(`{"name": null, "enabled": null, "roles": null, "port": null, "server_id": null, "user_id": null}`)},
	{"wrong types", []byte(`{"name": 5, "enabled": "yes", "roles": "admin", "port": "22", "server_id": 7, "user_id": []}`)},
	{"empty object", []byte(`{}`)},
}

// badIDs replace every path parameter.
var badIDs = []string{"not-a-uuid", "00000000-0000-0000-0000-000000000000", "%00", strings.Repeat("9", 300)}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// hangLimit bounds one call: a handler that waits on something the input
// made it expect is a defect too.
const hangLimit = 10 * time.Second

// TestBadInputEveryRoute walks every operation of the OpenAPI document as
// an administrator (so the checks reach the handlers) with broken bodies,
// odd bodies and ids that do not exist, and — per operation, in bodies
// built from its request schema so nothing else is wrong with them — each
// documented string property holding invalid UTF-8 or a NUL character and
// each property that is not nullable holding null. It asserts: no 5xx, no
// hang, the UTF-8 and NUL cases refused for their bytes (invalid_utf8,
// nul_character), null refused where the document does not allow it, and
// a refused call changes nothing in the database (a checksum of every
// table's rows; refusals may only append their own audit entry).
// Operations added later are covered without change.
func TestBadInputEveryRoute(t *testing.T) {
	e := newFullEnv(t, "")
	adm := e.login("admin", adminPW)
	doc, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	type op struct {
		method, path string
		hasBody      bool
		schema       *openapi3.Schema // the JSON body's schema, nil if none
		required     []string         // the body's required properties
	}
	var ops []op
	for path, item := range doc.Paths.Map() {
		for method, o := range item.Operations() {
			x := op{method: strings.ToUpper(method), path: path, hasBody: o.RequestBody != nil}
			if o.RequestBody != nil && o.RequestBody.Value != nil {
				if mt := o.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
					x.schema = mt.Schema.Value
					x.required = mt.Schema.Value.Required
				}
			}
			ops = append(ops, x)
		}
	}
	// Signing out would end the walk's session: last.
	sort.Slice(ops, func(i, j int) bool {
		li, lj := strings.Contains(ops[i].path, "logout"), strings.Contains(ops[j].path, "logout")
		if li != lj {
			return lj
		}
		return ops[i].method+ops[i].path < ops[j].method+ops[j].path
	})
	if len(ops) < 120 {
		t.Fatalf("only %d operations in the document: the walk looks broken", len(ops))
	}

	call := func(method, path string, body []byte) (resp, bool) {
		done := make(chan resp, 1)
		go func() {
			r := req{method: method, path: path, token: adm}
			if body != nil {
				r.body = body
			}
			done <- e.do(r)
		}()
		select {
		case r := <-done:
			return r, true
		case <-time.After(hangLimit):
			return resp{}, false
		}
	}
	group := e.jsonField(e.must(http.StatusOK, req{method: http.MethodPost, path: "/api/v1/server-groups/create", token: adm, body: map[string]any{"name": "bad-input"}}), "id")
	real := map[string]string{
		"/api/v1/server-groups/": group,
		"/api/v1/servers/":       e.server(t).ID,
		"/api/v1/users/":         e.createUser(adm, "walker", "Quiet-Lantern-83q"),
	}
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	sums := newTableSums(t, e.st)
	// check sends one call; mustRefuse: a 2xx is a problem; wantCode: the
	// refusal must carry this code.
	check := func(o op, path, what string, body []byte, mustRefuse bool, wantCode string) {
		// Jobs an accepted call started finish in the background and
		// write as they do: wait for them, so the checksum sees only
		// what this call does.
		e.waitQuiet(t)
		before := lastSeq(t, e.st)
		sumBefore := sums.take()
		r, ok := call(o.method, path, body)
		name := o.method + " " + o.path + " [" + what + "]"
		switch {
		case !ok:
			report("%s: no answer within %s", name, hangLimit)
			return
		case r.code >= 500 && !(r.code == http.StatusServiceUnavailable && strings.Contains(string(r.body), "not_configured")):
			report("%s: %d %.200s", name, r.code, r.body)
			return
		case mustRefuse && r.code < 400:
			report("%s: accepted with %d %.200s", name, r.code, r.body)
		case wantCode != "" && r.code < 500 && !bytes.Contains(r.body, []byte(`"code":"`+wantCode+`"`)):
			report("%s: refused with %d but not for its bytes (want code %s): %.200s", name, r.code, wantCode, r.body)
		}
		if r.code >= 400 {
			if r.header.Get("Content-Type") != "" && strings.HasPrefix(r.header.Get("Content-Type"), "application/json") &&
				(!bytes.Contains(r.body, []byte(`"error"`)) || !bytes.Contains(r.body, []byte(`"code"`))) {
				report("%s: %d without {error, code}: %.200s", name, r.code, r.body)
			}
			if after := lastSeq(t, e.st); after != before && !auditsRefusal(t, e, before) {
				report("%s: refused with %d but left %d audit entries", name, r.code, after-before)
			}
			if changed := sums.changed(sumBefore, sums.take()); len(changed) > 0 {
				report("%s: refused with %d but changed the tables %v", name, r.code, changed)
			}
		}
	}

	var stringCases, nullCases int
	for _, o := range ops {
		// Ids that do not exist, with no body (or {}).
		if pathParam.MatchString(o.path) {
			for _, id := range badIDs {
				var body []byte
				if o.hasBody {
					body = []byte(`{}`)
				}
				// A GET of a missing object must be refused; a live
				// stream of one too.
				check(o, pathParam.ReplaceAllString(o.path, id), "id "+id[:min(len(id), 12)], body, true, "")
			}
		}
		if !o.hasBody {
			continue
		}
		// Bodies go to objects that exist where the walk has one, so the
		// body checks are reached rather than a 404 for the id.
		path := o.path
		for prefix, id := range real {
			if strings.HasPrefix(o.path, prefix+"{") {
				path = strings.Replace(path, path[len(prefix):strings.Index(path, "}")+1], id, 1)
			}
		}
		path = pathParam.ReplaceAllString(path, "00000000-0000-0000-0000-000000000000")
		for _, b := range badBodies {
			check(o, path, b.name, b.body, true, "")
		}
		for _, b := range softBodies {
			// A body without the required properties is refused.
			must := len(o.required) > 0 && (b.name == "unknown field only" || b.name == "empty object")
			check(o, path, b.name, b.body, must, "")
		}
		if o.schema == nil {
			continue
		}
		// Per property, in a body built from the schema: the bytes of a
		// string decide the answer, whatever else the handler checks.
		for _, prop := range sortedProps(o.schema) {
			ps := o.schema.Properties[prop].Value
			if ps == nil {
				continue
			}
			for _, inj := range stringInjections(ps) {
				stringCases++
				body := schemaBody(o.schema, prop, inj.raw)
				check(o, path, prop+" "+inj.name, body, true, inj.code)
			}
			if !ps.Nullable && !ps.Type.IncludesNull() {
				nullCases++
				check(o, path, prop+" null", schemaBody(o.schema, prop, []byte("null")), true, "")
			}
		}
	}
	t.Logf("%d operations; %d invalid-UTF-8/NUL cases and %d null cases in bodies built from the schemas", len(ops), stringCases, nullCases)
	if stringCases < 200 || nullCases < 200 {
		t.Fatalf("only %d string and %d null cases: the schema walk looks broken", stringCases, nullCases)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// waitQuiet waits until no job is pending or running: their ingest and
// finish hooks write in the background.
func (e *fullEnv) waitQuiet(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, "no active job", func() bool {
		active, err := e.st.ActiveJobs(context.Background())
		return err == nil && len(active) == 0
	})
}

// injection is a string value with bytes that must be refused.
type injection struct {
	name string
	raw  []byte // the JSON value
	code string // the refusal's code
}

// stringInjections returns the broken values for a property: directly for
// a string, inside the first element for an array of strings, inside the
// first string property of an object.
func stringInjections(ps *openapi3.Schema) []injection {
	base := []injection{
		{"invalid UTF-8", []byte("\"a\xff\xfeb\""), codeInvalidUTF8},
		{"lone surrogate", []byte(`"a\ud800b"`), codeInvalidUTF8},
		{"NUL", []byte(`"a\u0000b"`), codeNULChar},
	}
	switch {
	case ps.Type.Is("string"):
		return base
	case ps.Type.Is("array") && ps.Items != nil && ps.Items.Value != nil && ps.Items.Value.Type.Is("string"):
		for i := range base {
			base[i].raw = append(append([]byte("["), base[i].raw...), ']')
		}
		return base
	case ps.Type.Is("object") && len(ps.Properties) > 0:
		for _, k := range sortedProps(ps) {
			if v := ps.Properties[k].Value; v != nil && v.Type.Is("string") {
				for i := range base {
					obj := exampleObject(ps)
					obj[k] = json.RawMessage(base[i].raw)
					raw, _ := json.Marshal(obj)
					base[i].raw = invalidRaw(raw, base[i].raw)
				}
				return base
			}
		}
	}
	return nil
}

// invalidRaw puts the broken value back into raw, where json.Marshal
// replaced its invalid bytes.
func invalidRaw(raw, value []byte) []byte {
	if bytes.Contains(raw, value) {
		return raw
	}
	return bytes.Replace(raw, []byte(`"a\ufffd\ufffdb"`), value, 1)
}

// schemaBody is a body of the schema with every property an example
// value, except prop, which is raw.
func schemaBody(sc *openapi3.Schema, prop string, raw []byte) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range sortedProps(sc) {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		if k == prop {
			b.Write(raw)
			continue
		}
		v, _ := json.Marshal(exampleValue(sc.Properties[k].Value))
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func sortedProps(sc *openapi3.Schema) []string {
	keys := make([]string, 0, len(sc.Properties))
	for k := range sc.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// exampleValue is a plausible value of a schema: its first enum value, a
// uuid, an address, a number at its minimum.
func exampleValue(sc *openapi3.Schema) any {
	if sc == nil {
		return "x"
	}
	if len(sc.Enum) > 0 {
		return sc.Enum[0]
	}
	switch {
	case sc.Type.Is("string"):
		switch sc.Format {
		case "uuid":
			return "00000000-0000-0000-0000-000000000000"
		case "email":
			return "walker@example.com"
		case "date-time":
			return "2030-01-01T00:00:00Z"
		case "byte":
			return "QUJD" // base64
		}
		return strings.Repeat("x", max(int(sc.MinLength), 1))
	case sc.Type.Is("integer"), sc.Type.Is("number"):
		if sc.Min != nil {
			return *sc.Min
		}
		return 1
	case sc.Type.Is("boolean"):
		return false
	case sc.Type.Is("array"):
		return []any{}
	case sc.Type.Is("object"):
		return exampleObject(sc)
	}
	return "x"
}

func exampleObject(sc *openapi3.Schema) map[string]any {
	obj := map[string]any{}
	for k, p := range sc.Properties {
		obj[k] = exampleValue(p.Value)
	}
	return obj
}

// tableSums is a checksum of every table's rows, to see that a refused
// call wrote nothing.
type tableSums struct {
	t  *testing.T
	db *sql.DB
	// volatile tables change without a write of the caller's: the audit
	// log (checked apart: only refusals may be appended) and what a read
	// refreshes (settings caches, rate-limit and session bookkeeping).
	volatile map[string]bool
}

func newTableSums(t *testing.T, st *store.Store) *tableSums {
	db, err := st.SQL()
	if err != nil {
		t.Fatal(err)
	}
	return &tableSums{t: t, db: db, volatile: map[string]bool{"audit_log": true, "audit_entries": true}}
}

// take returns a checksum per table.
func (s *tableSums) take() map[string]uint64 {
	s.t.Helper()
	rows, err := s.db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		s.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			s.t.Fatal(err)
		}
		if !s.volatile[n] {
			tables = append(tables, n)
		}
	}
	rows.Close()
	out := make(map[string]uint64, len(tables))
	for _, tb := range tables {
		h := fnv.New64a()
		r, err := s.db.Query(`SELECT * FROM "` + tb + `"`)
		if err != nil {
			s.t.Fatal(err)
		}
		cols, _ := r.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		var n int
		var sum uint64
		for r.Next() {
			if err := r.Scan(ptrs...); err != nil {
				s.t.Fatal(err)
			}
			h.Reset()
			fmt.Fprint(h, vals...)
			sum += h.Sum64() // order-independent
			n++
		}
		r.Close()
		out[tb] = sum ^ uint64(n)<<48
	}
	return out
}

// changed lists the tables whose checksum differs.
func (s *tableSums) changed(a, b map[string]uint64) []string {
	var out []string
	for k, v := range b {
		if a[k] != v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// auditsRefusal reports whether every entry after seq records a refusal
// (access.denied, or an area's own "….refused"/"…_refused" such as a
// refused backup restore), which a refused call may leave.
func auditsRefusal(t *testing.T, e *fullEnv, seq int64) bool {
	t.Helper()
	items, _, err := e.st.ListAudit(t.Context(), store.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Seq > seq && it.Action != actionDenied && !strings.HasSuffix(it.Action, "refused") {
			return false
		}
	}
	return true
}
