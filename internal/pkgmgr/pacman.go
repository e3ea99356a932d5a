package pkgmgr

import "strings"

// Pacman manages Arch Linux and derivatives. Arch supports only full-system
// upgrades, so LCM never installs or upgrades single packages there.
type Pacman struct{}

// pacman is the privileged, non-interactive pacman invocation.
const pacman = sudo + "pacman --noconfirm "

// Family returns FamilyPacman.
func (Pacman) Family() Family { return FamilyPacman }

// Name returns "pacman".
func (Pacman) Name() string { return "pacman" }

// ListInstalled prints the local database's desc records, each followed
// by a line %END%: unlike `pacman -Q` (name and version only) they carry
// the architecture and the package base (the source package). The
// database path comes from pacman-conf (pacman >= 5.1) when present.
func (Pacman) ListInstalled() string {
	return shScript(
		`db=$(pacman-conf DBPath 2>/dev/null) || db=/var/lib/pacman/`,
		`cd "${db%/}/local" || exit 1`,
		`for d in */; do [ -f "$d/desc" ] && { cat "$d/desc"; echo "%END%"; }; done; exit 0`,
	)
}

// ParseInstalled parses ListInstalled output.
func (Pacman) ParseInstalled(out []byte) ([]Package, error) { return ParsePacmanLocalDB(out) }

// pacmanPrivateDB is LCM's private copy of the sync databases (what
// checkupdates from pacman-contrib does): RefreshLists syncs it so the
// outdated list is fresh without ever syncing the system's databases alone.
// It lives in the management user's cache directory, not in a predictable
// /tmp path another user could plant.
const pacmanPrivateDB = `${XDG_CACHE_HOME:-$HOME/.cache}/lcm/pacman-db`

// ListUpgradable lists outdated packages (pacman -Qu: "name old -> new";
// exit 1 means none) against the private database RefreshLists synced,
// or the system's sync database when no private copy exists yet.
func (Pacman) ListUpgradable() string {
	return shScript(
		`tmp=`+pacmanPrivateDB,
		`if [ -d "$tmp/sync" ]; then pacman -Qu --dbpath "$tmp"; else pacman -Qu; fi; rc=$?; [ "$rc" -eq 1 ] && exit 0; exit "$rc"`,
	)
}

// ParseUpgradable parses ListUpgradable output.
func (Pacman) ParseUpgradable(out []byte) ([]Upgradable, error) { return ParsePacmanQu(out) }

// ListsAge reads the mtimes of the sync databases, the system's and LCM's
// private copy.
func (Pacman) ListsAge() string {
	return listsAgeScript(`/var/lib/pacman/sync/*.db`, `"`+pacmanPrivateDB+`"/sync/*.db`)
}

// RefreshLists never runs "pacman -Sy" on the system: a sync without the
// upgrade is how Arch systems end up partially upgraded (a later install
// pulls libraries newer than what the rest of the system was built
// against). It syncs LCM's private copy of the databases instead (the
// local database linked in, the system's sync databases as the starting
// point), which only ListUpgradable reads. The system's databases are
// refreshed together with the upgrade, by UpgradeAll's -Syu.
func (Pacman) RefreshLists() string {
	return shScript(
		`db=$(pacman-conf DBPath 2>/dev/null) || db=/var/lib/pacman/`,
		`tmp=`+pacmanPrivateDB,
		`mkdir -p "$tmp/sync" && ln -sfn "${db%/}/local" "$tmp/local" || exit 1`,
		`for f in "${db%/}"/sync/*.db; do [ -f "$f" ] && [ ! -e "$tmp/sync/${f##*/}" ] && cp -p "$f" "$tmp/sync/"; done`,
		pacman+`-Sy --dbpath "$tmp" --logfile /dev/null`,
	)
}

// UpgradeAll syncs the system's databases and upgrades the whole system in
// one transaction (-Syu): the only way LCM refreshes them.
func (Pacman) UpgradeAll() string { return pacman + "-Syu" }

// UpgradeSecurity has no pacman equivalent.
func (Pacman) UpgradeSecurity() (string, error) {
	return "", noSecurityChannel(FamilyPacman,
		"pacman has no security channel: Arch is rolling and ships fixes as regular updates; use upgrade-all (arch-audit lists affected packages)")
}

// Update is unsupported: upgrading single packages is a partial upgrade,
// which Arch does not support.
func (Pacman) Update(names ...string) (string, error) {
	if err := validateNames(FamilyPacman, pacmanName, names); err != nil {
		return "", err
	}
	return "", unsupported(FamilyPacman, "update",
		"Arch does not support partial upgrades: use upgrade-all")
}

// Remove removes the named packages and their now-unneeded dependencies.
func (Pacman) Remove(names ...string) (string, error) {
	if err := validateNames(FamilyPacman, pacmanName, names); err != nil {
		return "", err
	}
	return pacman + "-Rs " + QuoteAll(names), nil
}

// Autoremove removes orphans (installed as dependencies, now unneeded).
// pacman -Qdtq exits 1 when there are none.
func (Pacman) Autoremove() (string, error) {
	return shScript(
		`orphans=$(pacman -Qdtq)`,
		`if [ -z "$orphans" ]; then echo "lcm: no orphans"; exit 0; fi`,
		`printf '%s\n' "$orphans" | `+pacman+"-Rns -",
	), nil
}

// KernelCleanup is not needed: pacman replaces a kernel package in place.
func (Pacman) KernelCleanup() (string, error) {
	return "", unsupported(FamilyPacman, "kernel-cleanup",
		"not needed: pacman keeps one version per kernel package and replaces it on upgrade")
}

// Hold is unsupported from the command line: pacman reads holds from
// IgnorePkg in /etc/pacman.conf.
func (Pacman) Hold(names ...string) (string, error) {
	if err := validateNames(FamilyPacman, pacmanName, names); err != nil {
		return "", err
	}
	return "", unsupported(FamilyPacman, "hold",
		"pacman has no hold command: add the package to IgnorePkg in /etc/pacman.conf")
}

// Unhold is unsupported for the same reason as Hold.
func (Pacman) Unhold(names ...string) (string, error) {
	if err := validateNames(FamilyPacman, pacmanName, names); err != nil {
		return "", err
	}
	return "", unsupported(FamilyPacman, "unhold",
		"pacman has no hold command: remove the package from IgnorePkg in /etc/pacman.conf")
}

// Compare orders pacman versions ([epoch:]version-rel), which use rpm's
// algorithm (libalpm vercmp).
func (Pacman) Compare(a, b string) int { return CompareRPM(a, b) }

var _ Manager = Pacman{}

// ParsePacmanLocalDB parses ListInstalled output: libalpm's desc format,
// "%KEY%" lines each followed by value lines up to a blank line, records
// ended by "%END%". NAME and VERSION are required; BASE (the package base,
// absent in very old databases) defaults to the name, as dpkg's source
// does; ARCH "any" is kept as pacman reports it.
func ParsePacmanLocalDB(out []byte) ([]Package, error) {
	bad := lineErrs{parser: "pacman local database"}
	pkgs := make([]Package, 0, len(out)/400)
	rec := map[string]string{}
	key := ""
	end := func(line string) {
		switch {
		case len(rec) == 0: // an empty database, or %END% twice
		case rec["NAME"] == "" || rec["VERSION"] == "" || strings.ContainsAny(rec["NAME"]+rec["VERSION"], " \t"):
			bad.add(line + " (record without NAME or VERSION: " + rec["NAME"] + " " + rec["VERSION"] + ")")
		default:
			base := rec["BASE"]
			if base == "" {
				base = rec["NAME"]
			}
			pkgs = append(pkgs, Package{Name: rec["NAME"], Version: rec["VERSION"], Arch: rec["ARCH"], Source: base, Manager: "pacman"})
		}
		clear(rec)
		key = ""
	}
	eachLine(out, func(line string) {
		switch {
		case line == "%END%":
			end(line)
		case len(line) > 2 && line[0] == '%' && line[len(line)-1] == '%':
			key = line[1 : len(line)-1]
		case key == "":
			bad.add(line)
		default:
			if _, seen := rec[key]; !seen { // first value of multi-value keys
				rec[key] = strings.TrimSpace(line)
			}
		}
	})
	if len(rec) > 0 {
		end("(end of output)")
	}
	return pkgs, bad.err()
}

// ParsePacmanQu parses "pacman -Qu" and checkupdates output:
// "name old -> new", with " [ignored]" for IgnorePkg entries (skipped: they
// will not be upgraded).
func ParsePacmanQu(out []byte) ([]Upgradable, error) {
	bad := lineErrs{parser: "pacman -Qu"}
	var ups []Upgradable
	eachLine(out, func(line string) {
		f := strings.Fields(line)
		if len(f) == 5 && f[4] == "[ignored]" {
			return
		}
		if len(f) != 4 || f[2] != "->" {
			bad.add(line)
			return
		}
		ups = append(ups, Upgradable{Name: f[0], Current: f[1], Candidate: f[3]})
	})
	return ups, bad.err()
}
