package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// TestHardeningRoutesOverHTTP: validation, group scope and the
// restricted-mode gate of the hardening routes (the jobs themselves run
// against real hosts in the actions and fleet tests).
func TestHardeningRoutesOverHTTP(t *testing.T) {
	f := simFleet(t, 2, "ok\n", 0)
	h := newFleetHTTP(t)
	srv := h.simServer(t, f.Instances[0], "web")
	other := h.simServer(t, f.Instances[1], "other")
	m := h.p.Manager(t, "mgr")
	h.users["mgr"] = m
	base := "/api/v1/servers/" + srv.ID
	for _, c := range []struct {
		path, body string
		code       int
		errCode    string
	}{
		{"/ssh-root-login", `{}`, 400, "enabled_required"},
		{"/ssh-root-login", `{"enabled":"yes"}`, 400, ""},
		{"/restrict-sudo", `{"mode":"root"}`, 400, "invalid_mode"},
		{"/restrict-sudo", `{"mode":"restricted","x":1}`, 400, ""},
		{"/harden-ssh", `{"fix_main_config":1}`, 400, ""},
		{"/ssh-port", `{"port":0}`, 400, "invalid_port"},
		{"/ssh-port", `{"port":70000}`, 400, "invalid_port"},
	} {
		code, body := h.do(t, "admin", http.MethodPost, base+c.path, c.body)
		if code != c.code || !strings.Contains(string(body), `"code":"`+c.errCode) {
			t.Errorf("%s %s: %d %s", c.path, c.body, code, body)
		}
	}
	// A manager without the server in a group sees nothing of it.
	for p, b := range map[string]string{"/harden-ssh": `{}`, "/unharden-ssh": ``, "/ssh-root-login": `{"enabled":true}`, "/restrict-sudo": `{"mode":"full"}`, "/ssh-port": `{"port":2222}`} {
		if code, body := h.do(t, "mgr", http.MethodPost, "/api/v1/servers/"+other.ID+p, b); code != 404 {
			t.Errorf("manager %s: %d %s", p, code, body)
		}
	}
	// A submitted hardening job answers 202 with its name.
	code, body := h.do(t, "admin", http.MethodPost, base+"/harden-ssh", "")
	if st := decode[map[string]string](t, body); code != 202 || st["job_name"] != "Harden SSH" || st["kind"] != "harden-ssh" {
		t.Fatalf("harden: %d %s", code, body)
	}
	h.p.WaitJob(t, decode[map[string]string](t, body)["job_id"], time.Minute)

	// Restricted mode: reboot is refused before a job exists.
	if err := h.p.Store.RecordSudoMode(context.Background(), srv.ID, domain.SudoRestricted, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, body = h.do(t, "admin", http.MethodPost, base+"/reboot", "")
	if code != 409 || !strings.Contains(string(body), `"code":"restricted_mode"`) || !strings.Contains(string(body), `"status":"blocked"`) {
		t.Fatalf("reboot in restricted mode: %d %s", code, body)
	}
	_, body = h.do(t, "admin", http.MethodGet, base, "")
	if s := decode[serverDTO](t, body); s.SudoMode != "restricted" || s.SudoModeAt == nil || s.SSHProof == nil {
		t.Fatalf("server record: %s", body)
	}
}
