// Package pkgmgr builds the shell commands LCM runs to inspect and change
// packages on a server, and parses their output, for each package-manager
// family: apt/dpkg, dnf/yum/rpm, zypper, pacman and apk.
//
// Everything here is pure: builders return command text, parsers take bytes.
// Commands run through the server's shell as the management user; privileged
// steps are prefixed with "sudo -n" so a missing sudo rule fails at once
// instead of hanging on a password prompt. Package names are validated per
// family and shell-quoted before they reach any command line.
package pkgmgr

import (
	"errors"
	"fmt"

	"github.com/lcmproject/lcm/internal/domain"
)

// Family is a package-manager family.
type Family string

// Supported families.
const (
	FamilyAPT    Family = "apt"    // Debian, Ubuntu and derivatives (dpkg)
	FamilyDNF    Family = "dnf"    // RHEL, Fedora, Rocky, Alma, Amazon Linux (rpm; yum on EL7)
	FamilyZypper Family = "zypper" // SLES, openSUSE (rpm)
	FamilyPacman Family = "pacman" // Arch and derivatives
	FamilyAPK    Family = "apk"    // Alpine
)

// Package is one installed package.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"` // the manager's native version string (deb, EVR, …)
	Arch    string `json:"arch"`    // "" where the listing does not tell
	Source  string `json:"source"`  // source package; "" where unknown
	Manager string `json:"manager"` // "apt", "dnf", "yum", "zypper", "pacman", "apk"
}

// Upgradable is one package with a newer candidate version.
type Upgradable struct {
	Name      string `json:"name"`
	Current   string `json:"current"` // "" when the listing does not tell; see FillCurrent
	Candidate string `json:"candidate"`
	Arch      string `json:"arch"`
	Security  bool   `json:"security"` // the candidate comes from a security channel or advisory
	// Held: the package is on hold, so upgrades keep it back (listed by
	// a HoldLister; the upgrade simulation itself omits held packages).
	Held bool `json:"held,omitempty"`
}

// HoldLister is a Manager that can list its held packages that have a
// newer candidate: an upgrade keeps them back, so the upgrade listing
// omits them, yet they are outdated.
type HoldLister interface {
	ListHeld() string
	ParseHeld(out []byte) ([]Upgradable, error)
}

// AddHeld appends the held packages of held to inv.Upgradable (those not
// listed already), taking a missing architecture from the installed
// package of that name.
func AddHeld(inv *Inventory, held []Upgradable) {
	listed := make(map[string]bool, len(inv.Upgradable))
	for _, u := range inv.Upgradable {
		listed[u.Name+"\x00"+u.Arch] = true
	}
	arch := make(map[string]string, len(held))
	for _, h := range held {
		arch[h.Name] = ""
	}
	for _, p := range inv.Packages {
		if a, ok := arch[p.Name]; ok && a == "" {
			arch[p.Name] = p.Arch
		}
	}
	for _, h := range held {
		if h.Arch == "" {
			h.Arch = arch[h.Name]
		}
		if !listed[h.Name+"\x00"+h.Arch] {
			h.Held = true
			inv.Upgradable = append(inv.Upgradable, h)
			listed[h.Name+"\x00"+h.Arch] = true
		}
	}
}

// Inventory is what the refresh job stores per server.
type Inventory struct {
	Manager    string       `json:"manager"`
	Packages   []Package    `json:"packages"`
	Upgradable []Upgradable `json:"upgradable"`
}

// Manager builds commands and parses output for one family. Builders that
// take package names validate them and return an error wrapping
// domain.ErrInvalid for a bad name; actions a family cannot do return an
// *UnsupportedError carrying the documented answer.
type Manager interface {
	Family() Family
	// Name is the manager recorded in Package.Manager ("dnf" or "yum", …).
	Name() string

	ListInstalled() string
	ParseInstalled(out []byte) ([]Package, error)
	ListUpgradable() string
	ParseUpgradable(out []byte) ([]Upgradable, error)

	// ListsAge prints the server's time and the modification times of the
	// package-list index files (parsed by ParseListsAge): how old the lists
	// are that decide what an upgrade installs. Read-only, no sudo.
	ListsAge() string
	// RefreshLists brings the package lists up to date and fails (non-zero
	// exit, the manager's message on stderr) when any repository cannot be
	// refreshed. Every action that decides what to install runs it first;
	// see docs/packages.md.
	RefreshLists() string
	UpgradeAll() string
	UpgradeSecurity() (string, error)
	Update(names ...string) (string, error)
	Remove(names ...string) (string, error)
	Autoremove() (string, error)
	KernelCleanup() (string, error)
	Hold(names ...string) (string, error)
	Unhold(names ...string) (string, error)

	// Compare orders two versions of this family: <0, 0, >0.
	Compare(a, b string) int
}

// New returns the Manager for a family. FamilyDNF uses dnf; use NewDNF("yum")
// for EL7 hosts that only have yum.
func New(f Family) (Manager, error) {
	switch f {
	case FamilyAPT:
		return APT{}, nil
	case FamilyDNF:
		return NewDNF("dnf"), nil
	case FamilyZypper:
		return Zypper{}, nil
	case FamilyPacman:
		return Pacman{}, nil
	case FamilyAPK:
		return APK{}, nil
	}
	return nil, domain.Invalid("unknown_family", fmt.Sprintf("unknown package manager family %q", string(f)))
}

// ErrUnsupported is matched by every *UnsupportedError.
var ErrUnsupported = errors.New("action not supported by this package manager")

// ErrNoSecurityChannel is matched by the *UnsupportedError UpgradeSecurity
// returns for families without security-only updates (pacman, apk).
var ErrNoSecurityChannel = errors.New("package manager has no security channel")

// UnsupportedError says a family cannot do an action and what to do instead.
// It matches ErrUnsupported, domain.ErrInvalid and, for security upgrades,
// ErrNoSecurityChannel.
type UnsupportedError struct {
	Family Family
	Action string // e.g. "upgrade-security"
	Answer string // the documented answer shown to the operator
	noSec  bool
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Family, e.Action, e.Answer)
}

// Is lets errors.Is match the categories above.
func (e *UnsupportedError) Is(target error) bool {
	return target == ErrUnsupported || target == domain.ErrInvalid ||
		(e.noSec && target == ErrNoSecurityChannel)
}

func unsupported(f Family, action, answer string) error {
	return &UnsupportedError{Family: f, Action: action, Answer: answer}
}

func noSecurityChannel(f Family, answer string) error {
	return &UnsupportedError{Family: f, Action: "upgrade-security", Answer: answer, noSec: true}
}

// FillCurrent sets Upgradable.Current from the installed inventory where the
// upgradable listing (dnf check-update, zypper without edition-old) lacks it.
func FillCurrent(up []Upgradable, installed []Package) {
	need := map[string]bool{}
	for _, u := range up {
		if u.Current == "" {
			need[u.Name] = true
		}
	}
	if len(need) == 0 {
		return // the listing told every current version (apt's simulation does)
	}
	idx := make(map[string]string, 2*len(need))
	for _, p := range installed {
		if !need[p.Name] {
			continue
		}
		idx[p.Name+"\x00"+p.Arch] = p.Version
		if _, ok := idx[p.Name]; !ok {
			idx[p.Name] = p.Version
		}
	}
	for i := range up {
		if up[i].Current != "" {
			continue
		}
		if v, ok := idx[up[i].Name+"\x00"+up[i].Arch]; ok {
			up[i].Current = v
		} else {
			up[i].Current = idx[up[i].Name]
		}
	}
}
