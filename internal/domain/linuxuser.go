package domain

import "time"

// ProfileRule is one right of a privilege profile (validated and rendered
// by internal/privilege).
type ProfileRule struct {
	// Kind is "command" (exact argv), "edit" (sudoedit of Path) or "acl"
	// (POSIX ACL on the directory Path with Perms).
	Kind  string   `json:"kind"`
	Argv  []string `json:"argv,omitempty"`
	Path  string   `json:"path,omitempty"`
	Perms string   `json:"perms,omitempty"`
	// RunAs is the target user; "" means root.
	RunAs string `json:"run_as,omitempty"`
	// Confirmed is the explicit confirmation a dangerous rule needs.
	Confirmed bool `json:"confirmed,omitempty"`
}

// Privilege profile kinds: the two immutable built-ins and custom profiles.
const (
	ProfileFullAdmin = "full_admin"
	ProfileStandard  = "standard"
	ProfileCustom    = "custom"
)

// BlockUse is a profile's use of a profile block with parameter values.
type BlockUse struct {
	BlockID string            `json:"block_id"`
	Params  map[string]string `json:"params"`
}

// PrivilegeProfile is a set of sudo rights for distributed Linux users,
// provisioned as the group lcm-prof-<Slug> and /etc/sudoers.d/lcm-prof-<Slug>.
type PrivilegeProfile struct {
	ID          string
	Slug        string
	Name        string
	Description string
	Kind        string
	BuiltIn     bool
	Rules       []ProfileRule
	Blocks      []BlockUse
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// BlockParam is one {placeholder} of a profile block.
type BlockParam struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Kind    string `json:"kind"` // "name" or "path"
	Example string `json:"example,omitempty"`
}

// ProfileBlock is a rule template with per-family variants.
type ProfileBlock struct {
	ID          string
	Slug        string
	Name        string
	Description string
	BuiltIn     bool
	Params      []BlockParam
	RunAs       string
	// Variants maps a family ("apt", "dnf", "zypper", "pacman", "apk" or
	// "*" for all) to its rule templates.
	Variants  map[string][]ProfileRule
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Linux user account types.
const (
	AccountFull       = "full"
	AccountFileAccess = "file_access" // SFTP only: ForceCommand internal-sftp, nologin shell
)

// LinuxUser is a person in the Linux users catalogue.
type LinuxUser struct {
	ID               string
	Username         string
	FullName         string
	Email            string
	Shell            string
	AccountType      string
	SFTPChroot       bool
	DefaultProfileID string
	// PasswordHash is a crypt(3) hash ($6$…) for /etc/shadow; "" when the
	// person set no password. Never sent to clients.
	PasswordHash  string
	PasswordSetAt *time.Time
	Keys          []LinuxUserKey
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// LinuxUserKey is one SSH public key of a Linux user.
type LinuxUserKey struct {
	ID          string
	UserID      string
	Type        string
	Bits        int
	Fingerprint string
	Comment     string
	PublicKey   string // authorized_keys line
	CreatedAt   time.Time
}

// Assignment target types.
const (
	TargetServer = "server"
	TargetGroup  = "group"
)

// LinuxUserAssignment assigns a user to a server or group with a profile
// ("" means the user's default profile).
type LinuxUserAssignment struct {
	ID         string
	UserID     string
	TargetType string
	TargetID   string
	ProfileID  string
	CreatedAt  time.Time
}

// Provision states of a user's account on a server.
const (
	ProvisionPending     = "pending"
	ProvisionProvisioned = "provisioned"
	ProvisionDisabled    = "disabled"
	ProvisionFailed      = "failed"
)

// LinuxUserProvision is a user's account on one server as the last
// provisioning job left it.
type LinuxUserProvision struct {
	UserID      string
	ServerID    string
	Username    string
	ProfileSlug string
	State       string
	JobID       string
	Error       string
	UpdatedAt   time.Time
}

// Job kinds of the Linux users area.
const (
	// JobLinuxUser provisions, disables, enables or removes one Linux user
	// on a server (params: the operation's spec).
	JobLinuxUser JobKind = "linux-user"
	// JobLinuxUserScan lists a server's OS accounts.
	JobLinuxUserScan JobKind = "linux-user-scan"
)
