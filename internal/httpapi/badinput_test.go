package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/store"
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
	{"invalid UTF-8 in a string", []byte("{\"name\": \"a\xff\xfeb\", \"title\": \"a\xffb\", \"username\": \"a\xffb\"}")},
	{"NUL byte in a string", []byte(`{"name": "a\u0000b", "title": "a\u0000b", "username": "a\u0000b"}`)},
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
// odd bodies and ids that do not exist, and asserts: no 5xx, no hang, and
// a refused call leaves no audit entry (every write is audited, so a
// refused call that wrote something would show there). Operations added
// later are covered without change.
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
		required     []string        // the body's required properties
		props        map[string]bool // the body's documented properties
	}
	var ops []op
	for path, item := range doc.Paths.Map() {
		for method, o := range item.Operations() {
			x := op{method: strings.ToUpper(method), path: path, hasBody: o.RequestBody != nil, props: map[string]bool{}}
			if o.RequestBody != nil && o.RequestBody.Value != nil {
				if mt := o.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
					x.required = mt.Schema.Value.Required
					for name := range mt.Schema.Value.Properties {
						x.props[name] = true
					}
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
	check := func(o op, path, what string, body []byte, mustRefuse bool) {
		before := lastSeq(t, e.st)
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
		}
		if r.code >= 400 {
			if r.header.Get("Content-Type") != "" && strings.HasPrefix(r.header.Get("Content-Type"), "application/json") &&
				(!bytes.Contains(r.body, []byte(`"error"`)) || !bytes.Contains(r.body, []byte(`"code"`))) {
				report("%s: %d without {error, code}: %.200s", name, r.code, r.body)
			}
			if after := lastSeq(t, e.st); after != before && !auditsRefusal(t, e, before) {
				report("%s: refused with %d but left %d audit entries", name, r.code, after-before)
			}
		}
	}

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
				check(o, pathParam.ReplaceAllString(o.path, id), "id "+id[:min(len(id), 12)], body, true)
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
			check(o, path, b.name, b.body, true)
		}
		for _, b := range softBodies {
			// A body without the required properties is refused; so is
			// null for a documented property that is not nullable (the
			// handlers' types decide; pointers and lists may be null).
			must := len(o.required) > 0 && (b.name == "unknown field only" || b.name == "empty object")
			check(o, path, b.name, b.body, must)
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
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
