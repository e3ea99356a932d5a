package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/store"
)

// TestScheduleRoutes: GET/PUT /settings/schedules read and replace the
// overrides of the periodic tasks (settings:manage), refuse unknown tasks
// and bad specs without storing anything, and audit every change.
func TestScheduleRoutes(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, harnessOpts{no2FA: true})
	load, save := schedule.SettingsStore(h.st, quietLog)
	noop := func(context.Context) error { return nil }
	count := func(context.Context) (int, error) { return 0, nil }
	sch := schedule.New(schedule.Options{Log: quietLog, Overrides: load, SaveOverrides: save,
		Tasks: schedule.Registry(schedule.Hooks{AggregateStorage: count, RecomputeStatus: count, RefreshAll: noop, StorageSample: noop})})
	h.srv = New(Deps{Store: h.st, Bus: h.bus, Dev: true, Log: quietLog,
		ClientAddr: func(r *http.Request) netip.Addr {
			return h.svc.ClientAddr(r.Context(), r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		},
		Allowed:  func(ip netip.Addr) bool { return h.svc.Allowed(context.Background(), ip) },
		Services: Services{Auth: h.svc, Schedules: sch}})
	admin := h.login("admin", adminPW)
	h.createUser(admin, "schedmgr", adminPW, domain.RoleManager)
	mgr := h.login("schedmgr", adminPW)

	var got schedulesDTO
	h.do(req{method: "GET", path: "/api/v1/settings/schedules", token: admin}).json(t, &got)
	if len(got.Tasks) != 4 || got.Tasks[2].Name != schedule.TaskRefreshAll || got.Tasks[2].Spec != "0 2 * * *" || !got.Tasks[2].Enabled {
		t.Fatalf("defaults: %+v", got.Tasks)
	}
	for _, c := range []struct {
		name, token, method string
		body                any
		want                int
		code                string
	}{
		{"manager reads", mgr, "GET", nil, 403, ""},
		{"manager writes", mgr, "PUT", map[string]any{}, 403, ""},
		{"anonymous", "", "GET", nil, 401, ""},
		{"unknown task", admin, "PUT", map[string]any{"refresh_everything": map[string]any{"spec": "@daily"}}, 400, "unknown_task"},
		{"bad spec", admin, "PUT", map[string]any{"refresh_all": map[string]any{"spec": "0 25 * * *"}}, 400, "invalid_spec"},
		{"not an object", admin, "PUT", []string{"refresh_all"}, 400, ""},
		{"null", admin, "PUT", "null", 400, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(req{method: c.method, path: "/api/v1/settings/schedules", token: c.token, body: c.body})
			if r.code != c.want || (c.code != "" && r.code2(t) != c.code) {
				t.Fatalf("%d %s, want %d %s", r.code, r.body, c.want, c.code)
			}
		})
	}
	if m, _ := load(ctx); len(m) != 0 {
		t.Fatalf("refused changes were stored: %v", m)
	}

	r := h.do(req{method: "PUT", path: "/api/v1/settings/schedules", token: admin,
		body: map[string]any{"refresh_all": map[string]any{"spec": "30 3 * * 1-5"}, "storage_sample": map[string]any{"enabled": false}}})
	if r.code != 200 {
		t.Fatalf("PUT: %d %s", r.code, r.body)
	}
	r.json(t, &got)
	byName := map[string]schedule.TaskView{}
	for _, v := range got.Tasks {
		byName[v.Name] = v
	}
	if v := byName[schedule.TaskRefreshAll]; v.Spec != "30 3 * * 1-5" || v.DefaultSpec != "0 2 * * *" || !v.Enabled {
		t.Fatalf("refresh_all %+v", v)
	}
	if v := byName[schedule.TaskStorageSample]; v.Enabled || !v.DefaultEnabled || v.Spec != "0 * * * *" {
		t.Fatalf("storage_sample %+v", v)
	}
	// Read back from the store, and the audit entry.
	if eff, err := sch.Effective(ctx); err != nil || eff[2].Spec != "30 3 * * 1-5" || eff[3].Enabled {
		t.Fatalf("effective %+v %v", eff, err)
	}
	entries, _, err := h.st.ListAudit(ctx, store.AuditFilter{Action: "settings.schedules_updated", Limit: 5})
	if err != nil || len(entries) != 1 || entries[0].Actor != "admin" {
		t.Fatalf("audit %+v %v", entries, err)
	}
	// {} restores the defaults.
	h.do(req{method: "PUT", path: "/api/v1/settings/schedules", token: admin, body: map[string]any{}}).json(t, &got)
	for _, v := range got.Tasks {
		if v.Spec != v.DefaultSpec || v.Enabled != v.DefaultEnabled {
			t.Fatalf("after {}: %+v", v)
		}
	}
}
