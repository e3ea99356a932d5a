package domain

import (
	"encoding/json"
	"fmt"
	"strings"
)

// kindNames are the human names of the job kinds (JobName): what the user
// clicked or the scheduler did, in the words of the UI.
var kindNames = map[JobKind]string{
	JobJoin:              "Join server",
	JobConnectivity:      "Check connection",
	JobUpgradeSecurity:   "Install security updates",
	JobRotateKey:         "Rotate SSH key",
	JobReconnect:         "Reconnect",
	JobDecommission:      "Decommission server",
	JobRefresh:           "Refresh inventory",
	JobReboot:            "Reboot",
	JobStorageSample:     "Measure disk usage",
	JobHardenSSH:         "Harden SSH",
	JobUnhardenSSH:       "Remove SSH hardening",
	JobSSHRootLogin:      "Set SSH root login",
	JobRestrictSudo:      "Set sudo mode",
	JobSSHPort:           "Change SSH port",
	JobFirewall:          "Firewall",
	JobListeningPortScan: "Scan listening ports",
	JobLinuxUserScan:     "Scan Linux accounts",
	JobLinuxUser:         "Sync Linux users",
	JobContainer:         "Container action",
}

// linuxUserOpNames name a Linux user job by its params' "op".
var linuxUserOpNames = map[string]string{
	"apply": "Provision Linux user %s", "disable": "Disable Linux user %s",
	"enable": "Enable Linux user %s", "remove": "Remove Linux user %s", "keys": "Update the SSH keys of Linux user %s",
}

// firewallOpNames name a firewall job by its params' "op".
var firewallOpNames = map[string]string{
	FirewallStatus: "Read firewall status", FirewallEnable: "Enable firewall", FirewallDisable: "Disable firewall",
	FirewallAdd: "Add firewall rule", FirewallRemove: "Remove firewall rule",
}

// packageActionNames name a package action job by its params' "action"
// (the values of actions.PkgAction; a test there checks that every action
// has a name). A value maps to a verb taking the package names, or to a
// fixed name (no %s).
var packageActionNames = map[string]string{
	"refresh-lists":    "Refresh inventory", // the Refresh button: package lists, then the inventory
	"upgrade-all":      "Upgrade all packages",
	"upgrade-security": "Install security updates",
	"update":           "Update %s",
	"remove":           "Remove %s",
	"autoremove":       "Remove unused packages",
	"kernel-cleanup":   "Remove old kernels",
	"hold":             "Hold %s",
	"unhold":           "Release hold on %s",
}

// namedPackages is how many package names a job name lists before it
// counts the rest.
const namedPackages = 3

// JobName is the human name of a job of kind k with params (the job's
// job_name in the API): "Refresh inventory", "Update nginx, openssl",
// "Remove a, b, c and 2 more". Unknown kinds read as their kind, spaced.
func JobName(k JobKind, params []byte) string {
	if k == JobLinuxUser {
		var p struct {
			Op       string `json:"op"`
			Username string `json:"username"`
		}
		_ = json.Unmarshal(params, &p)
		if f, ok := linuxUserOpNames[p.Op]; ok && p.Username != "" {
			return fmt.Sprintf(f, p.Username)
		}
		return "Sync Linux users"
	}
	if k == JobFirewall {
		var p struct {
			Op string `json:"op"`
		}
		_ = json.Unmarshal(params, &p)
		if n, ok := firewallOpNames[p.Op]; ok {
			return n
		}
		return "Firewall"
	}
	if k == JobContainer {
		return containerJobName(params)
	}
	if k == JobPackageAction {
		var p struct {
			Action string   `json:"action"`
			Names  []string `json:"names"`
		}
		_ = json.Unmarshal(params, &p) // no or bad params: the generic name
		f, ok := packageActionNames[p.Action]
		if !ok {
			return "Package action"
		}
		if !strings.Contains(f, "%s") {
			return f
		}
		return fmt.Sprintf(f, packageList(p.Names))
	}
	if n, ok := kindNames[k]; ok {
		return n
	}
	s := strings.ReplaceAll(string(k), "-", " ")
	if s == "" {
		return "Job"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Name is the job's human name (JobName).
func (j Job) Name() string { return JobName(j.Kind, j.Params) }

func packageList(names []string) string {
	switch {
	case len(names) == 0:
		return "packages"
	case len(names) <= namedPackages:
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:namedPackages], ", "), len(names)-namedPackages)
}
