package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/store"
)

// TestFirewallRoutesOverHTTP: validation, allowlists, group scope and the
// read-back view of the firewall routes (the jobs run against the netns
// test host in internal/firewall).
func TestFirewallRoutesOverHTTP(t *testing.T) {
	f := simFleet(t, 2, "ok\n", 0)
	h := newFleetHTTP(t)
	srv := h.simServer(t, f.Instances[0], "web")
	other := h.simServer(t, f.Instances[1], "other")
	m := h.p.Manager(t, "mgr")
	h.users["mgr"] = m
	base := "/api/v1/servers/" + srv.ID

	// Allowlists: validated, normalised, unique by name.
	code, body := h.do(t, "admin", http.MethodPost, "/api/v1/settings/ip-allowlists", `{"name":"office","entries":["203.0.113.9/24","203.0.113.0/24","2001:db8::1"]}`)
	al := decode[ipAllowlistDTO](t, body)
	if code != 201 || strings.Join(al.Entries, ",") != "203.0.113.0/24,2001:db8::1/128" {
		t.Fatalf("create allowlist: %d %s", code, body)
	}
	for _, c := range []struct{ body, errCode string }{
		{`{"name":"office","entries":["10.0.0.1"]}`, "duplicate"},
		{`{"name":"x","entries":["example.org"]}`, "invalid_entries"},
		{`{"name":"x","entries":[]}`, "invalid_entries"},
		{`{"name":"","entries":["10.0.0.1"]}`, "invalid_name"},
	} {
		if code, body := h.do(t, "admin", http.MethodPost, "/api/v1/settings/ip-allowlists", c.body); code < 400 || code > 409 || !strings.Contains(string(body), `"code":"`+c.errCode) {
			t.Errorf("allowlist %s: %d %s", c.body, code, body)
		}
	}
	if code, body := h.do(t, "mgr", http.MethodGet, "/api/v1/settings/ip-allowlists", ""); code != 403 {
		t.Errorf("manager lists the allowlist settings: %d %s", code, body)
	}
	if code, body := h.do(t, "mgr", http.MethodGet, "/api/v1/ip-allowlists", ""); code != 200 || !strings.Contains(string(body), `"office"`) {
		t.Errorf("manager lists allowlists for rules: %d %s", code, body)
	}

	for _, c := range []struct {
		body, errCode string
	}{
		{`{"op":"open"}`, "invalid_op"},
		{`{"op":"add"}`, "rules_required"},
		{`{"op":"enable","rules":[{"port":22}]}`, "rules_not_allowed"},
		{`{"op":"add","rules":[{"port":0}]}`, "invalid_rule"},
		{`{"op":"add","rules":[{"port":22,"proto":"icmp"}]}`, "invalid_rule"},
		{`{"op":"add","rules":[{"port":22,"source":"example.org"}]}`, "invalid_rule"},
		{`{"op":"add","rules":[{"port":22,"comment":"a'b"}]}`, "invalid_rule"},
		{`{"op":"add","rules":[{"port":22,"source":"10.0.0.1","allowlist_id":"` + al.ID + `"}]}`, "invalid_rule"},
		{`{"op":"add","rules":[{"port":22,"allowlist_id":"nope"}]}`, "unknown_allowlist"},
	} {
		if code, body := h.do(t, "admin", http.MethodPost, base+"/firewall", c.body); code != 400 || !strings.Contains(string(body), `"code":"`+c.errCode) {
			t.Errorf("%s: %d %s", c.body, code, body)
		}
	}
	// A manager without the server in a group sees nothing of it.
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/firewall", `{"op":"status"}`}, {http.MethodGet, "/firewall", ""}, {http.MethodPost, "/listening-ports/scan", ""},
	} {
		if code, body := h.do(t, "mgr", c.method, "/api/v1/servers/"+other.ID+c.path, c.body); code != 404 {
			t.Errorf("manager %s %s: %d %s", c.method, c.path, code, body)
		}
	}
	// An allowlist rule is submitted as one rule per entry.
	code, body = h.do(t, "admin", http.MethodPost, base+"/firewall", `{"op":"add","rules":[{"port":443,"allowlist_id":"`+al.ID+`"}]}`)
	st := decode[map[string]string](t, body)
	if code != 202 || st["kind"] != "firewall" || st["job_name"] != "Add firewall rule" {
		t.Fatalf("add: %d %s", code, body)
	}
	job, err := h.p.Store.GetJob(context.Background(), store.SystemScope, st["job_id"])
	if err != nil || !strings.Contains(string(job.Params), `"source":"203.0.113.0/24"`) || !strings.Contains(string(job.Params), `"source":"2001:db8::1/128"`) ||
		!strings.Contains(string(job.Params), `"comment":"allowlist office"`) {
		t.Fatalf("job params: %s %v", job.Params, err)
	}
	h.p.WaitJob(t, st["job_id"], time.Minute)

	// The read-back view: nothing yet, then what a job stored.
	_, body = h.do(t, "admin", http.MethodGet, base+"/firewall", "")
	if fw := decode[firewallDTO](t, body); fw.CheckedAt != nil || string(fw.Rules) != "[]" || len(fw.Ports) != 0 {
		t.Fatalf("before any read-back: %s", body)
	}
	now := time.Now()
	if err := h.p.Store.RecordFirewall(context.Background(), srv.ID, "ufw", true, []byte(`[{"port":22,"proto":"tcp","source":"198.18.0.1/32"}]`), now); err != nil {
		t.Fatal(err)
	}
	if err := h.p.Store.RecordListening(context.Background(), srv.ID, []byte(`[{"proto":"tcp","address":"0.0.0.0","port":22,"process":"sshd","public":true},{"proto":"tcp","address":"0.0.0.0","port":3306,"public":true}]`), now); err != nil {
		t.Fatal(err)
	}
	_, body = h.do(t, "admin", http.MethodGet, base+"/firewall", "")
	fw := decode[firewallDTO](t, body)
	if !fw.Active || fw.Tool != "ufw" || len(fw.Ports) != 2 || fw.Ports[0].Open != "restricted" || fw.Ports[1].Open != "blocked" {
		t.Fatalf("after a read-back: %s", body)
	}
	_, body = h.do(t, "admin", http.MethodGet, base, "")
	if s := decode[serverDTO](t, body); !s.FirewallActive || s.FirewallTool != "ufw" || s.FirewallAt == nil {
		t.Fatalf("server record: %s", body)
	}
	// The overview counts it, scoped: the manager sees only its group's.
	_, body = h.do(t, "admin", http.MethodGet, "/api/v1/fleet/hardening", "")
	if ov := decode[hardeningOverviewDTO](t, body); ov.Total != 2 || ov.Firewalled != 1 {
		t.Fatalf("overview: %s", body)
	}
	if code, body := h.do(t, "admin", http.MethodDelete, "/api/v1/settings/ip-allowlists/"+al.ID, ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
}
