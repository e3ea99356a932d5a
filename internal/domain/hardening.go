package domain

import "time"

// Hardening job kinds (issue 13).
const (
	JobHardenSSH    JobKind = "harden-ssh"
	JobUnhardenSSH  JobKind = "unharden-ssh"
	JobSSHRootLogin JobKind = "ssh-root-login"
	JobRestrictSudo JobKind = "restrict-sudo"
	JobSSHPort      JobKind = "ssh-port"
)

// HardeningJobKinds lists the hardening kinds (part of JobKinds).
var HardeningJobKinds = []JobKind{JobHardenSSH, JobUnhardenSSH, JobSSHRootLogin, JobRestrictSudo, JobSSHPort, JobFirewall, JobListeningPortScan}

// Sudo modes of the management user.
const (
	SudoFull       = "full"
	SudoRestricted = "restricted"
)

// Hardening is what LCM last proved about a server's SSH and sudo. Each
// value changes only with a proof read back on the server; the times say
// when.
type Hardening struct {
	SSHHardenedAt *time.Time
	// RootLogin is sshd's effective PermitRootLogin for root ("" unknown).
	RootLogin   string
	RootLoginAt *time.Time
	// SSHProof are the sshd -T lines of the last proof.
	SSHProof []string
	// PortAt is when the SSH port (Server.Port) was last proven: a fresh
	// login on it after ssh-port, or an SSH proof that read it back.
	PortAt     *time.Time
	SudoMode   string
	SudoModeAt *time.Time
	// HelperVersion is lcm-helper's "version" line on the server and
	// HelperSHA256 its checksum, as last read back (restricted mode
	// installs it; jobs that use it upgrade it when the worker's differs);
	// HelperAt when.
	HelperVersion string
	HelperSHA256  string
	HelperAt      *time.Time
	// FirewallActive and FirewallTool are the firewall as last read back
	// (a firewall job or listening-ports scan); FirewallAt when.
	FirewallActive bool
	FirewallTool   string
	FirewallAt     *time.Time
}

// UsesHelper reports whether a job of kind runs lcm-helper in restricted
// sudo mode: such a job first checks the installed helper against the
// worker's and upgrades it (issue 13: "upgraded when LCM's version
// changes"). restrict-sudo checks it itself.
func UsesHelper(kind JobKind) bool {
	switch kind {
	case JobHardenSSH, JobUnhardenSSH, JobSSHRootLogin, JobSSHPort, JobLinuxUser, JobLinuxUserScan, JobFirewall:
		return true
	}
	return false
}

// blockedInRestricted are the job kinds restricted sudo mode refuses:
// reboot, and (when they exist) free-form scripts and custom actions.
var blockedInRestricted = map[JobKind]bool{JobReboot: true}

// BlockedInRestrictedMode reports whether kind is refused while the
// management user's sudo is restricted (spec, "Privilege profiles and
// restricted mode"): the submit answers 409 restricted_mode and the
// worker refuses too.
func BlockedInRestrictedMode(kind JobKind) bool { return blockedInRestricted[kind] }
