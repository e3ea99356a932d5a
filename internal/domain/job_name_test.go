package domain

import "testing"

func TestJobName(t *testing.T) {
	tests := []struct {
		kind   JobKind
		params string
		want   string
	}{
		{JobJoin, "", "Join server"},
		{JobConnectivity, "", "Check connection"},
		{JobUpgradeSecurity, "", "Install security updates"},
		{JobRotateKey, "", "Rotate SSH key"},
		{JobReconnect, "", "Reconnect"},
		{JobDecommission, "", "Decommission server"},
		{JobRefresh, "", "Refresh inventory"},
		{JobReboot, "", "Reboot"},
		{JobStorageSample, "", "Measure disk usage"},
		{JobPackageAction, `{"action":"refresh-lists"}`, "Refresh inventory"},
		{JobPackageAction, `{"action":"upgrade-all"}`, "Upgrade all packages"},
		{JobPackageAction, `{"action":"upgrade-security"}`, "Install security updates"},
		{JobPackageAction, `{"action":"update","names":["nginx"]}`, "Update nginx"},
		{JobPackageAction, `{"action":"remove","names":["a","b","c","d","e"]}`, "Remove a, b, c and 2 more"},
		{JobPackageAction, `{"action":"autoremove"}`, "Remove unused packages"},
		{JobPackageAction, `{"action":"kernel-cleanup"}`, "Remove old kernels"},
		{JobPackageAction, `{"action":"hold","names":["nginx","openssl"]}`, "Hold nginx, openssl"},
		{JobPackageAction, `{"action":"unhold","names":["nginx"]}`, "Release hold on nginx"},
		{JobPackageAction, `{"action":"update"}`, "Update packages"},
		{JobPackageAction, `{"action":"frobnicate"}`, "Package action"},
		{JobPackageAction, `not json`, "Package action"},
		{JobKind("container-restart"), "", "Container restart"},
		{JobLinuxUser, `{"op":"apply","username":"alice"}`, "Provision Linux user alice"},
		{JobLinuxUser, `{"op":"remove","username":"bob"}`, "Remove Linux user bob"},
		{JobLinuxUser, `{"users":[]}`, "Sync Linux users"},
		{JobLinuxUserScan, "", "Scan Linux accounts"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind)+" "+tt.params, func(t *testing.T) {
			if got := JobName(tt.kind, []byte(tt.params)); got != tt.want {
				t.Fatalf("JobName(%s, %s) = %q, want %q", tt.kind, tt.params, got, tt.want)
			}
		})
	}
	// Every kind has a name of its own, not its spaced wire value.
	for _, k := range JobKinds {
		if _, ok := kindNames[k]; !ok && k != JobPackageAction {
			t.Errorf("kind %s has no human name", k)
		}
	}
}
