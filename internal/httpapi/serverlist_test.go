package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// TestWholeFleetListingStaysCurrent: the admin's listing (served from
// rendered JSON) reflects every kind of change at once — settings, facts,
// group links, status, active jobs, deletion — and each entry is exactly
// what GET /servers/{id} (the direct path) returns.
func TestWholeFleetListingStaysCurrent(t *testing.T) {
	f := simFleet(t, 2, "ok\n", 1500*time.Millisecond)
	h := newFleetHTTP(t)
	a := h.simServer(t, f.Instances[0], "alpha")
	b := h.simServer(t, f.Instances[1], "bravo")
	st := h.p.Store

	list := func() []map[string]any {
		t.Helper()
		code, body := h.do(t, "admin", http.MethodGet, "/api/v1/servers", "")
		if code != 200 {
			t.Fatalf("list: %d %s", code, body)
		}
		out := decode[[]map[string]any](t, body)
		for _, item := range out { // every entry equals the direct path's
			_, one := h.do(t, "admin", http.MethodGet, "/api/v1/servers/"+item["id"].(string), "")
			if want := decode[map[string]any](t, one); !reflect.DeepEqual(item, want) {
				t.Fatalf("listed entry differs from GET /servers/{id}:\n%v\n%v", item, want)
			}
		}
		return out
	}
	byName := func(l []map[string]any, name string) map[string]any {
		for _, s := range l {
			if s["name"] == name {
				return s
			}
		}
		t.Fatalf("%s not listed in %v", name, l)
		return nil
	}

	first := list()
	if len(first) != 2 || first[0]["name"] != "alpha" || first[1]["name"] != "bravo" || first[0]["active_job_id"] != nil {
		t.Fatalf("first listing: %v", first)
	}
	if code, body := h.do(t, "admin", http.MethodPatch, "/api/v1/servers/"+a.ID+"/settings", `{"name":"charlie"}`); code != 200 {
		t.Fatalf("rename: %d %s", code, body)
	}
	if l := list(); l[0]["name"] != "bravo" || l[1]["name"] != "charlie" {
		t.Fatalf("after rename (sorted by name): %v", l)
	}
	// A server added after the listing was built is patched in, in order.
	added := h.simServer(t, f.Instances[0], "bat")
	if l := list(); len(l) != 3 || l[0]["name"] != "bat" || l[1]["name"] != "bravo" {
		t.Fatalf("after adding bat: %v", l)
	}
	if err := st.DeleteServer(t.Context(), added.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordServerFacts(t.Context(), b.ID, store.ServerFacts{OSName: "Debian GNU/Linux", OSVersion: "12", Kernel: "6.1.0-28-amd64"}); err != nil {
		t.Fatal(err)
	}
	if got := byName(list(), "bravo"); got["os_version"] != "12" || got["kernel"] != "6.1.0-28-amd64" {
		t.Fatalf("facts not listed: %v", got)
	}
	_, body := h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/create", `{"name":"web"}`)
	g := decode[groupDTO](t, body)
	if code, body := h.do(t, "admin", http.MethodPost, "/api/v1/server-groups/"+g.ID+"/assign-server", `{"server_id":"`+b.ID+`"}`); code != 200 {
		t.Fatalf("assign: %d %s", code, body)
	}
	if got := byName(list(), "bravo")["group_ids"].([]any); len(got) != 1 || got[0] != g.ID {
		t.Fatalf("group link not listed: %v", got)
	}
	if err := st.SaveStatus(t.Context(), store.StatusRecord{ServerID: b.ID, Status: string(domain.ServerRed), ComputedAt: time.Now().UTC(),
		InsightsJSON: []byte(`[{"level":"critical","code":"reboot_required","text":"a reboot is required"}]`)}); err != nil {
		t.Fatal(err)
	}
	if got := byName(list(), "bravo"); got["status"] != "red" || len(got["insights"].([]any)) != 1 {
		t.Fatalf("status not listed: %v", got)
	}

	// An active job shows without any fleet change, and goes when it ends.
	code, body := h.do(t, "admin", http.MethodPost, "/api/v1/servers/"+b.ID+"/packages/upgrade-security", "")
	if code != http.StatusAccepted {
		t.Fatalf("upgrade-security: %d %s", code, body)
	}
	job := decode[map[string]string](t, body)["job_id"]
	if got := byName(list(), "bravo")["active_job_id"]; got != job {
		t.Fatalf("active job %v, want %s", got, job)
	}
	deadline := time.Now().Add(30 * time.Second)
	for byName(list(), "bravo")["active_job_id"] != nil {
		if time.Now().After(deadline) {
			t.Fatal("active job still listed after 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := st.DeleteServer(t.Context(), a.ID); err != nil {
		t.Fatal(err)
	}
	if l := list(); len(l) != 1 || l[0]["name"] != "bravo" {
		t.Fatalf("after delete: %v", l)
	}

	// Filters and managers take the direct path and agree with the cache.
	_, body = h.do(t, "admin", http.MethodGet, "/api/v1/servers?status=red", "")
	var filtered []json.RawMessage
	if err := json.Unmarshal(body, &filtered); err != nil || len(filtered) != 1 {
		t.Fatalf("status filter: %s", body)
	}
}
