package privilege

import (
	"regexp"
	"sort"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// Families are the distribution families a block has variants for; they are
// the package-manager families servers report (pkgmgr.Family).
var Families = []string{"apt", "dnf", "zypper", "pacman", "apk"}

// AnyFamily is the variant key used for every family without its own.
const AnyFamily = "*"

// Param kinds.
const (
	// ParamName is a unit, container, jail or similar name.
	ParamName = "name"
	// ParamPath is an absolute, clean path.
	ParamPath = "path"
)

// Param is one {placeholder} of a block (the domain's BlockParam).
type Param = domain.BlockParam

// Block is a rule template: rules with {param} placeholders, one variant
// per distribution family (or AnyFamily), and an optional run-as user for
// its command rules.
type Block struct {
	Slug        string            `json:"slug"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Params      []Param           `json:"params"`
	RunAs       string            `json:"run_as,omitempty"`
	Variants    map[string][]Rule `json:"variants"`
}

var (
	paramNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	nameValueRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9@._+-]{0,127}$`)
	placeholder = regexp.MustCompile(`\{([^{}]*)\}`)
	knownFamily = map[string]bool{"apt": true, "dnf": true, "zypper": true, "pacman": true, "apk": true, AnyFamily: true}
)

// ValidFamily reports whether f is a known family (not AnyFamily).
func ValidFamily(f string) bool { return f != AnyFamily && knownFamily[f] }

// CheckBlock validates a block definition: parameter names, variant
// families, placeholders that name a parameter, and every rule of every
// variant once rendered with the parameters' examples.
func CheckBlock(b Block) *Error {
	if strings.TrimSpace(b.Name) == "" {
		return reject(CodeTemplateInvalid, "the block needs a name")
	}
	seen := map[string]bool{}
	for _, p := range b.Params {
		if !paramNameRe.MatchString(p.Name) {
			return reject(CodeTemplateInvalid, "parameter name %q must be lower case letters, digits and _", p.Name)
		}
		if seen[p.Name] {
			return reject(CodeTemplateInvalid, "parameter %q is declared twice", p.Name)
		}
		if p.Kind != ParamName && p.Kind != ParamPath {
			return reject(CodeTemplateInvalid, "parameter %q has kind %q (name or path)", p.Name, p.Kind)
		}
		seen[p.Name] = true
	}
	if b.RunAs != "" && !validRunAs(b.RunAs) {
		return reject(CodeBadRunAs, "run-as user %q is not a valid user name", b.RunAs)
	}
	if len(b.Variants) == 0 {
		return reject(CodeNoVariant, "the block has no variant")
	}
	for fam, rules := range b.Variants {
		if !knownFamily[fam] {
			return reject(CodeUnknownFamily, "unknown family %q", fam)
		}
		if len(rules) == 0 {
			return reject(CodeEmpty, "the %s variant has no rules", fam)
		}
		for i, r := range rules {
			for _, w := range templateWords(r) {
				for _, m := range placeholder.FindAllStringSubmatch(w, -1) {
					if !seen[m[1]] {
						e := reject(CodeUnknownParam, "placeholder {%s} names no parameter", m[1])
						e.Index = i
						return e
					}
				}
			}
		}
		ex := map[string]string{}
		for _, p := range b.Params {
			ex[p.Name] = p.Example
			if ex[p.Name] == "" {
				ex[p.Name] = map[string]string{ParamName: "example", ParamPath: "/srv/example"}[p.Kind]
			}
		}
		if _, err := b.Expand(fam, ex); err != nil {
			return err
		}
	}
	return nil
}

func templateWords(r Rule) []string {
	return append(append([]string(nil), r.Argv...), r.Path, r.Perms, r.RunAs)
}

// Variant returns the rules for family: its own variant or AnyFamily's.
func (b Block) Variant(family string) ([]Rule, bool) {
	if r, ok := b.Variants[family]; ok {
		return r, true
	}
	r, ok := b.Variants[AnyFamily]
	return r, ok
}

// SupportedFamilies lists the families the block renders for.
func (b Block) SupportedFamilies() []string {
	var out []string
	for _, f := range Families {
		if _, ok := b.Variant(f); ok {
			out = append(out, f)
		}
	}
	return out
}

// Expand fills the block's variant for family with params and returns the
// normalized, validated rules.
func (b Block) Expand(family string, params map[string]string) ([]Rule, *Error) {
	if family != AnyFamily && !ValidFamily(family) {
		return nil, reject(CodeUnknownFamily, "unknown family %q", family)
	}
	tmpl, ok := b.Variant(family)
	if !ok {
		return nil, reject(CodeNoVariant, "block %q has no variant for %s", b.Name, family)
	}
	declared := map[string]Param{}
	for _, p := range b.Params {
		declared[p.Name] = p
	}
	for k := range params {
		if _, ok := declared[k]; !ok {
			return nil, reject(CodeUnknownParam, "block %q has no parameter %q", b.Name, k)
		}
	}
	for _, p := range b.Params {
		v, ok := params[p.Name]
		if !ok || v == "" {
			return nil, reject(CodeMissingParam, "parameter %q (%s) is missing", p.Name, p.Label)
		}
		if e := checkParamValue(p, v); e != nil {
			return nil, e
		}
	}
	fill := func(s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(m string) string { return params[m[1:len(m)-1]] })
	}
	out := make([]Rule, 0, len(tmpl))
	for i, t := range tmpl {
		r := Rule{Kind: t.Kind, Path: fill(t.Path), Perms: t.Perms, RunAs: fill(t.RunAs), Confirmed: t.Confirmed}
		if r.RunAs == "" && (r.Kind == KindCommand || r.Kind == "") {
			r.RunAs = b.RunAs
		}
		for _, a := range t.Argv {
			r.Argv = append(r.Argv, fill(a))
		}
		r = Normalize(r)
		if e := Validate(r); e != nil {
			e.Index = i
			return nil, e
		}
		out = append(out, r)
	}
	return out, nil
}

func checkParamValue(p Param, v string) *Error {
	switch p.Kind {
	case ParamPath:
		if e := validatePath(v, p.Name); e != nil {
			e.Code = CodeInvalidParam
			return e
		}
		if v == "/" {
			return reject(CodeInvalidParam, "parameter %q may not be /", p.Name)
		}
	default:
		if !nameValueRe.MatchString(v) || strings.Contains(v, "..") {
			return reject(CodeInvalidParam, "parameter %q must be a name of letters, digits and @ . _ + - (got %q)", p.Name, v)
		}
	}
	return nil
}

// ---- built-in blocks ----

// Program paths per family. Debian, RHEL and SUSE keep daemons in
// /usr/sbin; Arch merged sbin into /usr/bin; Alpine has OpenRC, no systemd.
var (
	systemdFamilies = []string{"apt", "dnf", "zypper", "pacman"}
	nginxBin        = map[string]string{"apt": "/usr/sbin/nginx", "dnf": "/usr/sbin/nginx", "zypper": "/usr/sbin/nginx", "pacman": "/usr/bin/nginx", "apk": "/usr/sbin/nginx"}
	apacheUnit      = map[string]string{"apt": "apache2", "dnf": "httpd", "zypper": "apache2", "pacman": "httpd", "apk": "apache2"}
	apacheCtl       = map[string]string{"apt": "/usr/sbin/apache2ctl", "dnf": "/usr/sbin/apachectl", "zypper": "/usr/sbin/apachectl", "pacman": "/usr/bin/apachectl", "apk": "/usr/sbin/apachectl"}
	apacheSites     = map[string]string{"apt": "/etc/apache2/sites-available", "dnf": "/etc/httpd/conf.d", "zypper": "/etc/apache2/vhosts.d", "pacman": "/etc/httpd/conf/extra", "apk": "/etc/apache2/conf.d"}
	nginxSites      = map[string]string{"apt": "/etc/nginx/sites-available", "dnf": "/etc/nginx/conf.d", "zypper": "/etc/nginx/vhosts.d", "pacman": "/etc/nginx/conf.d", "apk": "/etc/nginx/http.d"}
	mariadbConf     = map[string]string{"apt": "/etc/mysql/mariadb.conf.d/50-server.cnf", "dnf": "/etc/my.cnf.d/mariadb-server.cnf", "zypper": "/etc/my.cnf", "pacman": "/etc/my.cnf.d/server.cnf", "apk": "/etc/my.cnf.d/mariadb-server.cnf"}
	pgHBA           = map[string]string{"apt": "/etc/postgresql/{version}/main/pg_hba.conf", "dnf": "/var/lib/pgsql/data/pg_hba.conf", "zypper": "/var/lib/pgsql/data/pg_hba.conf", "pacman": "/var/lib/postgres/data/pg_hba.conf", "apk": "/var/lib/postgresql/{version}/data/pg_hba.conf"}
	nftBin          = map[string]string{"apt": "/usr/sbin/nft", "dnf": "/usr/sbin/nft", "zypper": "/usr/sbin/nft", "pacman": "/usr/bin/nft", "apk": "/usr/sbin/nft"}
)

func cmd(argv ...string) Rule { return Rule{Kind: KindCommand, Argv: argv} }

func edit(p string) Rule { return Rule{Kind: KindEdit, Path: p} }

func acl(p, perms string) Rule { return Rule{Kind: KindACL, Path: p, Perms: perms} }

// unitOps returns the rules for service operations on unit per family:
// systemctl on systemd families, rc-service on Alpine.
func unitOps(unit string, ops ...string) map[string][]Rule {
	v := map[string][]Rule{}
	for _, f := range systemdFamilies {
		for _, op := range ops {
			v[f] = append(v[f], cmd("/usr/bin/systemctl", op, unit))
		}
	}
	for _, op := range ops {
		v["apk"] = append(v["apk"], cmd("/sbin/rc-service", unit, op))
	}
	return v
}

func perFamily(f func(fam string) []Rule) map[string][]Rule {
	v := map[string][]Rule{}
	for _, fam := range Families {
		if r := f(fam); len(r) > 0 {
			v[fam] = r
		}
	}
	return v
}

func merge(vs ...map[string][]Rule) map[string][]Rule {
	out := map[string][]Rule{}
	for _, v := range vs {
		for f, r := range v {
			out[f] = append(out[f], r...)
		}
	}
	return out
}

var unitParam = Param{Name: "unit", Label: "Service (unit) name", Kind: ParamName, Example: "nginx"}

// Builtins returns LCM's built-in blocks, sorted by slug. They are shipped
// read-only: clone one to change it.
func Builtins() []Block {
	bs := []Block{
		{Slug: "service-status", Name: "Status of a service", Description: "Show the status of one service.",
			Params: []Param{unitParam}, Variants: unitOps("{unit}", "status")},
		{Slug: "service-restart", Name: "Restart a service", Description: "Restart one service.",
			Params: []Param{unitParam}, Variants: unitOps("{unit}", "restart")},
		{Slug: "service-reload", Name: "Reload a service", Description: "Reload the configuration of one service.",
			Params: []Param{unitParam}, Variants: unitOps("{unit}", "reload")},
		{Slug: "service-operate", Name: "Operate a service", Description: "Status, start, stop, restart and reload of one service.",
			Params: []Param{unitParam}, Variants: unitOps("{unit}", "status", "start", "stop", "restart", "reload")},
		{Slug: "service-journal", Name: "Read the journal of a service", Description: "Read the system journal of one unit (systemd families).",
			Params: []Param{unitParam}, Variants: perFamily(func(f string) []Rule {
				if f == "apk" {
					return nil // OpenRC logs to syslog files: use the read-log-directory block.
				}
				return []Rule{cmd("/usr/bin/journalctl", "-u", "{unit}"), cmd("/usr/bin/journalctl", "-u", "{unit}", "-n", "200")}
			})},
		{Slug: "nginx-operate", Name: "Operate nginx", Description: "Test the nginx configuration, reload and restart nginx, show its status.",
			Variants: merge(perFamily(func(f string) []Rule { return []Rule{cmd(nginxBin[f], "-t")} }),
				unitOps("nginx", "status", "reload", "restart"))},
		{Slug: "nginx-admin", Name: "Administer nginx", Description: "Operate nginx, edit its main configuration and manage its site files.",
			Variants: merge(perFamily(func(f string) []Rule {
				return []Rule{cmd(nginxBin[f], "-t"), edit("/etc/nginx/nginx.conf"), acl(nginxSites[f], "rwx")}
			}), unitOps("nginx", "status", "reload", "restart"))},
		{Slug: "apache-operate", Name: "Operate Apache", Description: "Test the Apache configuration, reload and restart Apache, show its status.",
			Variants: perFamily(func(f string) []Rule {
				return append([]Rule{cmd(apacheCtl[f], "configtest")}, unitOps(apacheUnit[f], "status", "reload", "restart")[f]...)
			})},
		{Slug: "apache-admin", Name: "Administer Apache", Description: "Operate Apache and manage its site configuration files.",
			Variants: perFamily(func(f string) []Rule {
				r := []Rule{cmd(apacheCtl[f], "configtest"), acl(apacheSites[f], "rwx")}
				return append(r, unitOps(apacheUnit[f], "status", "reload", "restart")[f]...)
			})},
		{Slug: "postgresql-operate", Name: "Operate PostgreSQL", Description: "Status, reload and restart of the PostgreSQL server.",
			Variants: unitOps("postgresql", "status", "reload", "restart")},
		{Slug: "postgresql-admin", Name: "Administer PostgreSQL", Description: "Operate PostgreSQL and edit its client authentication file (pg_hba.conf).",
			Params: []Param{{Name: "version", Label: "Major version", Kind: ParamName, Example: "15"}},
			Variants: perFamily(func(f string) []Rule {
				return append([]Rule{edit(pgHBA[f])}, unitOps("postgresql", "status", "reload", "restart")[f]...)
			})},
		{Slug: "postgresql-backup", Name: "Dump a PostgreSQL database", Description: "Run pg_dump of one database as the postgres user into the backup directory.",
			Params: []Param{{Name: "database", Label: "Database", Kind: ParamName, Example: "app"}}, RunAs: "postgres",
			Variants: map[string][]Rule{AnyFamily: {cmd("/usr/bin/pg_dump", "--format=custom", "--file=/var/backups/{database}.dump", "{database}")}}},
		{Slug: "mariadb-operate", Name: "Operate MariaDB", Description: "Status and restart of the MariaDB server.",
			Variants: unitOps("mariadb", "status", "restart")},
		{Slug: "mariadb-admin", Name: "Administer MariaDB", Description: "Operate MariaDB and edit its server configuration.",
			Variants: merge(perFamily(func(f string) []Rule { return []Rule{edit(mariadbConf[f])} }), unitOps("mariadb", "status", "restart"))},
		{Slug: "container-operate", Name: "Operate a container", Description: "Start, stop and restart one Docker container and read its logs.",
			Params: []Param{{Name: "container", Label: "Container name", Kind: ParamName, Example: "web"}},
			Variants: map[string][]Rule{AnyFamily: {
				cmd("/usr/bin/docker", "start", "{container}"), cmd("/usr/bin/docker", "stop", "{container}"),
				cmd("/usr/bin/docker", "restart", "{container}"), cmd("/usr/bin/docker", "logs", "--tail", "200", "{container}"),
			}}},
		{Slug: "container-logs", Name: "Read the logs of a container", Description: "Read the last lines of one Docker container's logs.",
			Params:   []Param{{Name: "container", Label: "Container name", Kind: ParamName, Example: "web"}},
			Variants: map[string][]Rule{AnyFamily: {cmd("/usr/bin/docker", "logs", "--tail", "200", "{container}")}}},
		{Slug: "podman-operate", Name: "Operate a Podman container", Description: "Start, stop and restart one Podman container and read its logs.",
			Params: []Param{{Name: "container", Label: "Container name", Kind: ParamName, Example: "web"}},
			Variants: map[string][]Rule{AnyFamily: {
				cmd("/usr/bin/podman", "start", "{container}"), cmd("/usr/bin/podman", "stop", "{container}"),
				cmd("/usr/bin/podman", "restart", "{container}"), cmd("/usr/bin/podman", "logs", "--tail", "200", "{container}"),
			}}},
		{Slug: "certbot-renew", Name: "Renew certificates", Description: "Renew Let's Encrypt certificates with certbot and list them.",
			Variants: map[string][]Rule{AnyFamily: {cmd("/usr/bin/certbot", "renew"), cmd("/usr/bin/certbot", "certificates")}}},
		{Slug: "package-index-refresh", Name: "Refresh the package index", Description: "Download the package lists (no installation).",
			Variants: perFamily(func(f string) []Rule {
				switch f {
				case "apt":
					return []Rule{cmd("/usr/bin/apt-get", "update")}
				case "dnf":
					return []Rule{cmd("/usr/bin/dnf", "makecache")}
				case "zypper":
					return []Rule{cmd("/usr/bin/zypper", "refresh")}
				case "apk":
					return []Rule{cmd("/sbin/apk", "update")}
				}
				return nil // pacman -Sy alone leads to partial upgrades.
			})},
		{Slug: "security-upgrade", Name: "Install security updates", Description: "Install the pending security updates.",
			Variants: perFamily(func(f string) []Rule {
				switch f {
				case "apt":
					return []Rule{cmd("/usr/bin/unattended-upgrade")}
				case "dnf":
					return []Rule{cmd("/usr/bin/dnf", "-y", "upgrade", "--security")}
				case "zypper":
					return []Rule{cmd("/usr/bin/zypper", "--non-interactive", "patch", "--category", "security")}
				}
				return nil // pacman and apk have no security channel.
			})},
		{Slug: "firewall-status", Name: "Read the firewall", Description: "List the firewall rules.",
			Variants: perFamily(func(f string) []Rule {
				r := []Rule{cmd(nftBin[f], "list", "ruleset")}
				switch f {
				case "apt":
					r = append(r, cmd("/usr/sbin/ufw", "status", "verbose"))
				case "dnf", "zypper":
					r = append(r, cmd("/usr/bin/firewall-cmd", "--list-all"))
				}
				return r
			})},
		{Slug: "fail2ban-status", Name: "Read fail2ban", Description: "Show fail2ban's jails and one jail's bans.",
			Params:   []Param{{Name: "jail", Label: "Jail", Kind: ParamName, Example: "sshd"}},
			Variants: map[string][]Rule{AnyFamily: {cmd("/usr/bin/fail2ban-client", "status"), cmd("/usr/bin/fail2ban-client", "status", "{jail}")}}},
		{Slug: "edit-file", Name: "Edit a file", Description: "Edit one file through sudoedit.",
			Params:   []Param{{Name: "file", Label: "File", Kind: ParamPath, Example: "/etc/hosts"}},
			Variants: map[string][]Rule{AnyFamily: {edit("{file}")}}},
		{Slug: "read-log-directory", Name: "Read a log directory", Description: "Read access (POSIX ACL with default ACL) to one log directory.",
			Params:   []Param{{Name: "directory", Label: "Directory", Kind: ParamPath, Example: "/var/log/nginx"}},
			Variants: map[string][]Rule{AnyFamily: {acl("{directory}", "r")}}},
		{Slug: "web-root-write", Name: "Write a web root", Description: "Read and write access (POSIX ACL with default ACL) to one directory such as a web root.",
			Params:   []Param{{Name: "directory", Label: "Directory", Kind: ParamPath, Example: "/var/www/html"}},
			Variants: map[string][]Rule{AnyFamily: {acl("{directory}", "rwx")}}},
		{Slug: "reboot-server", Name: "Reboot the server", Description: "Reboot the server.",
			Variants: perFamily(func(f string) []Rule {
				if f == "apk" {
					return []Rule{cmd("/sbin/reboot")}
				}
				return []Rule{cmd("/usr/bin/systemctl", "reboot")}
			})},
		{Slug: "disk-usage", Name: "Measure disk usage", Description: "Measure the size of one directory, including files only root can read.",
			Params:   []Param{{Name: "directory", Label: "Directory", Kind: ParamPath, Example: "/var/lib/docker"}},
			Variants: map[string][]Rule{AnyFamily: {cmd("/usr/bin/du", "-sh", "{directory}")}}},
		{Slug: "network-sockets", Name: "List listening sockets", Description: "List listening sockets with their processes.",
			Variants: perFamily(func(f string) []Rule {
				if f == "apk" {
					return []Rule{cmd("/bin/netstat", "-tulpn")}
				}
				return []Rule{cmd("/usr/bin/ss", "-tulpn")}
			})},
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].Slug < bs[j].Slug })
	return bs
}

// ExampleParams returns each parameter's example value.
func (b Block) ExampleParams() map[string]string {
	out := map[string]string{}
	for _, p := range b.Params {
		out[p.Name] = p.Example
	}
	return out
}

// FromDomain is the template of a stored block.
func FromDomain(b domain.ProfileBlock) Block {
	return Block{Slug: b.Slug, Name: b.Name, Description: b.Description, Params: b.Params, RunAs: b.RunAs, Variants: b.Variants}
}

// ToDomain is a block as the store keeps it.
func (b Block) ToDomain() domain.ProfileBlock {
	return domain.ProfileBlock{Slug: b.Slug, Name: b.Name, Description: b.Description, Params: b.Params, RunAs: b.RunAs, Variants: b.Variants}
}
