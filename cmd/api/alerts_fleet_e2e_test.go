package main

import (
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestBackupOverdueAlertFollowsBackups: the fleet-wide "system backup
// overdue" rule reads the real backup service — it fires while there has
// never been a backup and resolves once one succeeds.
func TestBackupOverdueAlertFollowsBackups(t *testing.T) {
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Env: []string{"LCM_BACKUP_PASSPHRASE=Quartz-Lantern-Meadow-Falcon-2026"}})
	tok := login(t, a, "admin", a.AdminPassword)
	if resp, body := a.Do("POST", "/api/v1/alert-rules", tok, map[string]any{"name": "backups", "type": "backup_overdue",
		"severity": "warning", "allServers": true, "channelIds": []string{}, "params": map[string]any{"hours": 1}}, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("create rule: %d %s", resp.StatusCode, body)
	}
	type report struct {
		Fired, Resolved int
		Notes           []string
	}
	var r report
	if resp, body := a.Do("POST", "/api/v1/alerts/evaluate", tok, nil, &r); resp.StatusCode != 200 || r.Fired != 1 {
		t.Fatalf("evaluate without any backup: %d %s", resp.StatusCode, body)
	}
	_, events := a.Do("GET", "/api/v1/alert-events", tok, nil, nil)
	if !strings.Contains(string(events), "last successful system backup was never") {
		t.Fatalf("alert events: %s", events)
	}
	if resp, body := a.Do("POST", "/api/v1/system/backups/trigger-now", tok, nil, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("backup: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("POST", "/api/v1/alerts/evaluate", tok, nil, &r); resp.StatusCode != 200 || r.Resolved != 1 {
		t.Fatalf("evaluate after a backup: %d %s", resp.StatusCode, body)
	}
}
