package domain

import "time"

// Firewall job kinds (issue 13, section 3).
const (
	JobFirewall          JobKind = "firewall"
	JobListeningPortScan JobKind = "listening-ports-scan"
)

// Firewall operations (the "op" of a firewall job).
const (
	FirewallStatus  = "status"
	FirewallEnable  = "enable"
	FirewallDisable = "disable"
	FirewallAdd     = "add"
	FirewallRemove  = "remove"
)

// FirewallState is what LCM last read back about a server's firewall.
type FirewallState struct {
	ServerID string
	// Tool is the backend found on the server (ufw, firewalld, nftables;
	// "" none or never checked); Active whether it filters.
	Tool      string
	Active    bool
	RulesJSON []byte // []firewall.Rule as JSON
	CheckedAt *time.Time
	// PortsJSON is the last listening-ports scan ([]firewall.Socket).
	PortsJSON []byte
	ScannedAt *time.Time
}

// IPAllowlist is a named list of addresses and networks, reusable as the
// source of firewall rules.
type IPAllowlist struct {
	ID          string
	Name        string
	Description string
	Entries     []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}
