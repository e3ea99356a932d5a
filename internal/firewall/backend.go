package firewall

import (
	"bufio"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Command is one privileged invocation of a firewall tool: argv (the tool
// first, resolved by sudo's secure_path) and optional stdin. Each is run
// as `sudo -n argv…` — in restricted sudo mode the firewall tool is on the
// management user's allowlist, so no shell runs as root.
type Command struct {
	Args  []string
	Stdin string
}

// NftTable is the nftables table LCM owns; nothing else is touched.
const NftTable = "lcm"

// DetectScript prints the backend to use: the first of ufw, firewalld
// (firewall-cmd), nftables (nft) that is installed, or nothing. It runs
// without root.
const DetectScript = `PATH=$PATH:/usr/sbin:/sbin
for t in ufw firewall-cmd nft; do
  if command -v "$t" >/dev/null 2>&1; then
    case $t in ufw) echo ufw ;; firewall-cmd) echo firewalld ;; nft) echo nftables ;; esac
    exit 0
  fi
done
echo none`

// ParseDetect reads DetectScript's answer ("" for none).
func ParseDetect(out string) string {
	switch strings.TrimSpace(out) {
	case UFW:
		return UFW
	case Firewalld:
		return Firewalld
	case Nftables:
		return Nftables
	}
	return ""
}

// ValidBackend reports whether b names a backend.
func ValidBackend(b string) bool { return b == UFW || b == Firewalld || b == Nftables }

// State is what a backend reads back from the server.
type State struct {
	Active bool   `json:"active"`
	Rules  []Rule `json:"rules"`
}

// --- ufw -------------------------------------------------------------------

// ufwArgs is the rule part of `ufw allow …` / `ufw delete allow …`, one per
// protocol (ufw needs a protocol for a range).
func ufwArgs(r Rule) [][]string {
	var out [][]string
	protos := []string{r.Proto}
	if r.Proto == Any && r.PortEnd > 0 {
		protos = r.protos()
	}
	for _, p := range protos {
		a := []string{}
		if r.Source != "" {
			a = append(a, "from", r.Source)
		} else {
			a = append(a, "from", "any")
		}
		a = append(a, "to", "any", "port", r.PortSpec(":"))
		if p != Any {
			a = append(a, "proto", p)
		}
		out = append(out, a)
	}
	return out
}

// UFWStatus reads the configured rules (also while inactive) and the state.
func UFWStatus() []Command {
	return []Command{{Args: []string{"ufw", "status"}}, {Args: []string{"ufw", "show", "added"}}}
}

// UFWAdd adds r; first puts it before every other rule (LCM's own rule
// must beat any deny the server has).
func UFWAdd(r Rule, first bool) []Command {
	var cmds []Command
	for _, a := range ufwArgs(r) {
		args := []string{"ufw"}
		if first {
			args = append(args, "insert", "1")
		}
		args = append(args, "allow")
		args = append(args, a...)
		if r.Comment != "" {
			args = append(args, "comment", r.Comment)
		}
		cmds = append(cmds, Command{Args: args})
	}
	return cmds
}

// UFWRemove deletes r.
func UFWRemove(r Rule) []Command {
	var cmds []Command
	for _, a := range ufwArgs(r) {
		cmds = append(cmds, Command{Args: append([]string{"ufw", "delete", "allow"}, a...)})
	}
	return cmds
}

// UFWEnable and UFWDisable switch ufw without a prompt.
func UFWEnable() Command  { return Command{Args: []string{"ufw", "--force", "enable"}} }
func UFWDisable() Command { return Command{Args: []string{"ufw", "--force", "disable"}} }

// ParseUFWState reads `ufw status` (first line "Status: active|inactive")
// and `ufw show added` (the configured rules as ufw commands).
func ParseUFWState(status, added string) (State, error) {
	var st State
	first, _, _ := strings.Cut(strings.TrimSpace(status), "\n")
	switch strings.TrimSpace(first) {
	case "Status: active":
		st.Active = true
	case "Status: inactive":
	default:
		return st, fmt.Errorf("ufw status: unexpected first line %q", first)
	}
	rules, err := ParseUFWAdded(added)
	if err != nil {
		return st, err
	}
	st.Rules = rules
	return st, nil
}

// ParseUFWAdded parses `ufw show added`. Lines other than allow rules
// (deny, limit, routed, app profiles) are skipped: LCM manages allow rules.
func ParseUFWAdded(out string) ([]Rule, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	header := false
	var rules []Rule
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "Added user rules"):
			header = true
			continue
		case line == "(None)":
			continue
		}
		r, ok := parseUFWRule(line)
		if ok {
			rules = append(rules, r)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !header {
		return nil, fmt.Errorf("ufw show added: no header line")
	}
	return rules, nil
}

// parseUFWRule reads "ufw allow [from X] [to any] [port P] [proto Q]
// [comment 'C']" or the short form "ufw allow 80[/tcp]".
func parseUFWRule(line string) (Rule, bool) {
	rest, ok := strings.CutPrefix(line, "ufw allow ")
	if !ok {
		return Rule{}, false
	}
	var r Rule
	if i := strings.Index(rest, " comment '"); i >= 0 {
		c := rest[i+len(" comment '"):]
		if !strings.HasSuffix(c, "'") {
			return Rule{}, false
		}
		r.Comment = strings.TrimSuffix(c, "'")
		rest = rest[:i]
	}
	f := strings.Fields(rest)
	r.Proto = Any
	if len(f) == 1 { // short form: 80, 80/tcp, 8000:8010/udp
		spec, proto, hasProto := strings.Cut(f[0], "/")
		if hasProto {
			r.Proto = proto
		}
		if !parsePorts(spec, ":", &r) {
			return Rule{}, false
		}
		return normalised(r)
	}
	for i := 0; i+1 < len(f); i += 2 {
		v := f[i+1]
		switch f[i] {
		case "from":
			if v != "any" {
				r.Source = v
			}
		case "to":
			if v != "any" {
				return Rule{}, false // a destination address: not LCM's kind of rule
			}
		case "port":
			if !parsePorts(v, ":", &r) {
				return Rule{}, false
			}
		case "proto":
			r.Proto = v
		default:
			return Rule{}, false
		}
	}
	if len(f)%2 != 0 || r.Port == 0 {
		return Rule{}, false
	}
	return normalised(r)
}

// normalised validates a parsed rule and normalises it as Validate does
// (an address source reads back as a /32 or /128 prefix).
func normalised(r Rule) (Rule, bool) {
	if r.Validate() != nil {
		return Rule{}, false
	}
	return r, true
}

func parsePorts(spec, sep string, r *Rule) bool {
	lo, hi, isRange := strings.Cut(spec, sep)
	p, err := strconv.Atoi(lo)
	if err != nil || p < 1 || p > 65535 {
		return false
	}
	r.Port = p
	if isRange {
		e, err := strconv.Atoi(hi)
		if err != nil || e < p || e > 65535 {
			return false
		}
		if e != p {
			r.PortEnd = e
		}
	}
	return true
}

// --- nftables ----------------------------------------------------------------

// NftStatus lists LCM's table; a missing table (exit 1) means inactive.
func NftStatus() Command { return Command{Args: []string{"nft", "list", "table", "inet", NftTable}} }

// NftDisable removes LCM's table (and with it every rule LCM added).
func NftDisable() Command { return Command{Args: []string{"nft", "delete", "table", "inet", NftTable}} }

// NftApply replaces LCM's table atomically (one `nft -f -` transaction)
// with a default-drop input chain that accepts established traffic,
// loopback, ICMP and the rules, in order.
func NftApply(rules []Rule) Command {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {}\ndelete table inet %s\ntable inet %s {\n", NftTable, NftTable, NftTable)
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n")
	b.WriteString("\t\tct state established,related accept\n\t\tiif \"lo\" accept\n\t\tmeta l4proto { icmp, ipv6-icmp } accept\n")
	for _, r := range rules {
		b.WriteString("\t\t" + nftRule(r) + "\n")
	}
	b.WriteString("\t}\n}\n")
	return Command{Args: []string{"nft", "-f", "-"}, Stdin: b.String()}
}

// nftRule renders r as nft prints it back (so a read-back compares).
func nftRule(r Rule) string {
	var parts []string
	if r.Source != "" {
		fam := "ip"
		if strings.Contains(r.Source, ":") {
			fam = "ip6"
		}
		parts = append(parts, fam+" saddr "+hostOrPrefix(r.Source))
	}
	switch r.Proto {
	case Any:
		parts = append(parts, "meta l4proto { tcp, udp } th dport "+r.PortSpec("-"))
	default:
		parts = append(parts, r.Proto+" dport "+r.PortSpec("-"))
	}
	parts = append(parts, "accept")
	if r.Comment != "" {
		parts = append(parts, `comment "`+r.Comment+`"`)
	}
	return strings.Join(parts, " ")
}

// hostOrPrefix prints a one-address prefix as the address (as nft and
// firewalld print it back).
func hostOrPrefix(src string) string {
	if p, err := netip.ParsePrefix(src); err == nil && p.IsSingleIP() {
		return p.Addr().String()
	}
	return src
}

// ParseNftTable reads `nft list table inet lcm`: the accept rules LCM
// wrote (the fixed ones — established, loopback, ICMP — are not listed).
func ParseNftTable(out string) ([]Rule, error) {
	if !strings.Contains(out, "table inet "+NftTable+" {") {
		return nil, fmt.Errorf("nft: no table inet %s in the output", NftTable)
	}
	var rules []Rule
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if r, ok := parseNftRule(line); ok {
			rules = append(rules, r)
		}
	}
	return rules, nil
}

func parseNftRule(line string) (Rule, bool) {
	var r Rule
	if i := strings.Index(line, ` comment "`); i >= 0 {
		c := line[i+len(` comment "`):]
		if !strings.HasSuffix(c, `"`) {
			return Rule{}, false
		}
		r.Comment = strings.TrimSuffix(c, `"`)
		line = line[:i]
	}
	rest, ok := strings.CutSuffix(line, " accept")
	if !ok {
		return Rule{}, false
	}
	if s, ok := strings.CutPrefix(rest, "ip saddr "); ok {
		r.Source, rest, _ = strings.Cut(s, " ")
	} else if s, ok := strings.CutPrefix(rest, "ip6 saddr "); ok {
		r.Source, rest, _ = strings.Cut(s, " ")
	}
	var spec string
	switch {
	case strings.HasPrefix(rest, "tcp dport "):
		r.Proto, spec = TCP, strings.TrimPrefix(rest, "tcp dport ")
	case strings.HasPrefix(rest, "udp dport "):
		r.Proto, spec = UDP, strings.TrimPrefix(rest, "udp dport ")
	case strings.HasPrefix(rest, "meta l4proto { tcp, udp } th dport "):
		r.Proto, spec = Any, strings.TrimPrefix(rest, "meta l4proto { tcp, udp } th dport ")
	default:
		return Rule{}, false
	}
	if !parsePorts(spec, "-", &r) {
		return Rule{}, false
	}
	return normalised(r)
}

// --- firewalld ---------------------------------------------------------------

// FirewalldStatus asks whether firewalld runs and lists LCM's rich rules.
// firewall-cmd talks to the daemon over D-Bus and fails while it is
// stopped ("FirewallD is not running", exit 252): the permanent rules of
// a stopped firewalld are read with firewall-offline-cmd instead
// (FirewalldRulesOffline).
func FirewalldStatus() []Command {
	return []Command{{Args: []string{"firewall-cmd", "--state"}}, {Args: []string{"firewall-cmd", "--permanent", "--list-rich-rules"}}}
}

// FirewalldRulesOffline lists the permanent rich rules without the daemon.
func FirewalldRulesOffline() Command {
	return Command{Args: []string{"firewall-offline-cmd", "--list-rich-rules"}}
}

// firewalldRich renders r as rich rules (one per protocol).
func firewalldRich(r Rule) []string {
	var out []string
	for _, p := range r.protos() {
		var b strings.Builder
		b.WriteString("rule")
		if r.Source != "" {
			fam := "ipv4"
			if strings.Contains(r.Source, ":") {
				fam = "ipv6"
			}
			fmt.Fprintf(&b, ` family="%s" source address="%s"`, fam, r.Source)
		}
		fmt.Fprintf(&b, ` port port="%s" protocol="%s" accept`, r.PortSpec("-"), p)
		out = append(out, b.String())
	}
	return out
}

// FirewalldAdd adds r permanently and, when firewalld runs, to the running
// firewall (reload). While it is stopped firewall-cmd cannot reach it, so
// the rule goes into the permanent configuration with firewall-offline-cmd
// and takes effect when firewalld starts — which is how enabling puts
// LCM's own access in place before the firewall is switched on.
func FirewalldAdd(r Rule, running bool) []Command {
	return firewalldRules("--add-rich-rule=", r, running)
}

// FirewalldRemove removes r (offline while firewalld is stopped).
func FirewalldRemove(r Rule, running bool) []Command {
	return firewalldRules("--remove-rich-rule=", r, running)
}

func firewalldRules(flag string, r Rule, running bool) []Command {
	var cmds []Command
	for _, rich := range firewalldRich(r) {
		if running {
			cmds = append(cmds, Command{Args: []string{"firewall-cmd", "--permanent", flag + rich}})
		} else {
			cmds = append(cmds, Command{Args: []string{"firewall-offline-cmd", flag + rich}})
		}
	}
	if !running {
		return cmds
	}
	return append(cmds, Command{Args: []string{"firewall-cmd", "--reload"}})
}

// FirewalldEnable starts firewalld (systemd) and FirewalldDisable stops it.
func FirewalldEnable() Command {
	return Command{Args: []string{"systemctl", "enable", "--now", "firewalld"}}
}
func FirewalldDisable() Command {
	return Command{Args: []string{"systemctl", "disable", "--now", "firewalld"}}
}

// ParseFirewalldState reads `firewall-cmd --state` ("running" / "not
// running") and `--list-rich-rules` (LCM's rules: accept rules on a port).
func ParseFirewalldState(state, rich string) (State, error) {
	st := State{Active: strings.TrimSpace(state) == "running"}
	merged := map[string]int{}
	for _, line := range strings.Split(rich, "\n") {
		r, ok := parseRich(strings.TrimSpace(line))
		if !ok {
			continue
		}
		// tcp and udp twins of one "any" rule read back as one rule.
		k := fmt.Sprintf("%s/%s", r.PortSpec("-"), r.Source)
		if i, seen := merged[k]; seen && st.Rules[i].Proto != r.Proto {
			st.Rules[i].Proto = Any
			continue
		}
		merged[k] = len(st.Rules)
		st.Rules = append(st.Rules, r)
	}
	return st, nil
}

func parseRich(line string) (Rule, bool) {
	rest, ok := strings.CutPrefix(line, "rule ")
	if !ok || !strings.HasSuffix(rest, " accept") {
		return Rule{}, false
	}
	var r Rule
	attr := func(name string) string {
		i := strings.Index(rest, name+`="`)
		if i < 0 {
			return ""
		}
		v := rest[i+len(name)+2:]
		v, _, _ = strings.Cut(v, `"`)
		return v
	}
	r.Source = attr("address")
	if !parsePorts(attr("port"), "-", &r) {
		return Rule{}, false
	}
	r.Proto = attr("protocol")
	return normalised(r)
}

// --- common ------------------------------------------------------------------

// Status is the read-back commands of a backend.
func Status(backend string) []Command {
	switch backend {
	case UFW:
		return UFWStatus()
	case Firewalld:
		return FirewalldStatus()
	}
	return []Command{NftStatus()}
}

// Has reports whether state holds r (same key; comments may differ).
func (s State) Has(r Rule) bool {
	for _, x := range s.Rules {
		if x.Key() == r.Key() {
			return true
		}
	}
	return false
}
