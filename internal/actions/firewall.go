package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/firewall"
	"github.com/lcmproject/lcm/internal/remote"
)

// FirewallParams are a firewall job's parameters.
type FirewallParams struct {
	Op    string          `json:"op"`
	Rules []firewall.Rule `json:"rules,omitempty"` // add, remove
}

// FirewallProof is what a firewall job read back on the server.
type FirewallProof struct {
	// Proven: the state below was read back after the change (or after
	// its rollback).
	Proven bool            `json:"proven"`
	Tool   string          `json:"tool,omitempty"`
	Active bool            `json:"active"`
	Rules  []firewall.Rule `json:"rules"`
	// LCMRule is the rule that keeps LCM's own address on the SSH port
	// open (enable); FreshLogin that a new connection proved it.
	LCMRule    *firewall.Rule `json:"lcm_rule,omitempty"`
	FreshLogin bool           `json:"fresh_login,omitempty"`
	RolledBack bool           `json:"rolled_back,omitempty"`
	Missing    string         `json:"missing,omitempty"`
}

// PortsScan is a listening-ports scan: the sockets, marked with what the
// firewall read back in the same run makes of them.
type PortsScan struct {
	Sockets  []firewall.Socket `json:"sockets"`
	Firewall *FirewallProof    `json:"firewall,omitempty"`
	// Partial: ss ran without root, so processes of other users are
	// missing (restricted sudo mode).
	Partial bool `json:"partial,omitempty"`
}

// FirewallJob runs one firewall operation and proves it by read-back.
type FirewallJob struct{}

// ListeningPortsScan lists listening sockets and the firewall's state.
type ListeningPortsScan struct{}

// fwCmd is a firewall tool call under sudo: `sudo -n tool args…` — no
// shell as root, so restricted mode's allowlist of the tool suffices.
func fwCmd(c firewall.Command) remote.Command {
	q := make([]string, len(c.Args))
	for i, a := range c.Args {
		q[i] = shQuote(a)
	}
	rc := remote.Command{Cmd: "sudo -n " + strings.Join(q, " ")}
	if c.Stdin != "" {
		rc.Stdin = strings.NewReader(c.Stdin)
	}
	return rc
}

func runFw(ctx context.Context, ex remote.Executor, out io.Writer, cmds ...firewall.Command) error {
	for _, c := range cmds {
		fmt.Fprintf(out, "lcm: sudo %s\n", strings.Join(c.Args, " "))
		code, err := run(ctx, ex, out, fwCmd(c))
		if err != nil {
			return err
		}
		if code != 0 {
			if c.Args[0] == "systemctl" && sudoRestricted(ctx, ex) {
				// Restricted sudo mode allows firewall-cmd but not
				// systemctl: lcm-helper starts or stops firewalld.
				if err := firewalldViaHelper(ctx, ex, out, c); err != nil {
					return err
				}
				continue
			}
			return failf("%s exited with code %d (see the output)", strings.Join(c.Args, " "), code)
		}
	}
	return nil
}

// firewalldViaHelper runs `lcm-helper firewalld enable|disable` for the
// systemctl command c (firewall.FirewalldEnable / FirewalldDisable).
func firewalldViaHelper(ctx context.Context, ex remote.Executor, out io.Writer, c firewall.Command) error {
	verb := ""
	if len(c.Args) > 1 {
		verb = c.Args[1]
	}
	if verb != "enable" && verb != "disable" {
		return failf("%s: restricted sudo mode does not allow systemctl", strings.Join(c.Args, " "))
	}
	fmt.Fprintf(out, "lcm: restricted sudo mode: lcm-helper firewalld %s\n", verb)
	code, err := run(ctx, ex, out, remote.Command{Cmd: helperCmd("firewalld", verb)})
	if err != nil {
		return err
	}
	if code != 0 {
		return failf("lcm-helper firewalld %s exited with code %d: restricted sudo mode allows firewall-cmd but not systemctl, and the helper could not %s firewalld (an older helper: switch the server to full sudo mode and back to install the current one)", verb, code, verb)
	}
	return nil
}

// sudoRestricted reports whether the management user's sudo refuses a
// plain command (restricted mode) — asked only to explain a failure.
func sudoRestricted(ctx context.Context, ex remote.Executor) bool {
	code, err := run(ctx, ex, io.Discard, remote.Command{Cmd: "sudo -n true"})
	return err == nil && code != 0
}

// detectFirewall names the backend on the server ("" none).
func detectFirewall(ctx context.Context, ex remote.Executor, out io.Writer) (string, error) {
	raw, _, err := capture(ctx, ex, out, remote.Command{Cmd: firewall.DetectScript})
	if err != nil {
		return "", err
	}
	return firewall.ParseDetect(raw), nil
}

// readFirewall reads the backend's state back.
func readFirewall(ctx context.Context, ex remote.Executor, out io.Writer, tool string) (firewall.State, error) {
	switch tool {
	case firewall.UFW:
		status, code, err := capture(ctx, ex, out, fwCmd(firewall.Command{Args: []string{"ufw", "status"}}))
		if err != nil {
			return firewall.State{}, err
		}
		if code != 0 {
			return firewall.State{}, failf("ufw status exited with code %d (is sudo allowed?)", code)
		}
		added, code, err := capture(ctx, ex, out, fwCmd(firewall.Command{Args: []string{"ufw", "show", "added"}}))
		if err != nil {
			return firewall.State{}, err
		}
		if code != 0 {
			return firewall.State{}, failf("ufw show added exited with code %d", code)
		}
		return firewall.ParseUFWState(status, added)
	case firewall.Nftables:
		raw, code, err := capture(ctx, ex, io.Discard, fwCmd(firewall.NftStatus()))
		if err != nil {
			return firewall.State{}, err
		}
		if code != 0 {
			// No LCM table: nothing filters on LCM's behalf. Tell "no
			// table" from "not allowed" by asking nft for its version.
			if c, err := run(ctx, ex, io.Discard, fwCmd(firewall.Command{Args: []string{"nft", "--version"}})); err != nil || c != 0 {
				return firewall.State{}, failf("sudo nft is not allowed or nft does not run")
			}
			return firewall.State{}, nil
		}
		rules, err := firewall.ParseNftTable(raw)
		if err != nil {
			return firewall.State{}, err
		}
		return firewall.State{Active: true, Rules: rules}, nil
	case firewall.Firewalld:
		cmds := firewall.FirewalldStatus()
		state, _, err := capture(ctx, ex, out, fwCmd(cmds[0]))
		if err != nil {
			return firewall.State{}, err
		}
		rules := cmds[1]
		if strings.TrimSpace(state) != "running" {
			rules = firewall.FirewalldRulesOffline()
		}
		rich, code, err := capture(ctx, ex, out, fwCmd(rules))
		if err != nil {
			return firewall.State{}, err
		}
		if code != 0 {
			return firewall.State{}, failf("%s exited with code %d: the firewalld rules could not be read", strings.Join(rules.Args, " "), code)
		}
		return firewall.ParseFirewalldState(state, rich)
	}
	return firewall.State{}, failf("no firewall tool (ufw, firewall-cmd or nft) is installed on the server")
}

func switchOff(tool string) []firewall.Command {
	switch tool {
	case firewall.UFW:
		return []firewall.Command{firewall.UFWDisable()}
	case firewall.Firewalld:
		return []firewall.Command{firewall.FirewalldDisable()}
	}
	return []firewall.Command{firewall.NftDisable()}
}

func addCmds(tool string, st firewall.State, rules []firewall.Rule, first bool) ([]firewall.Command, error) {
	var cmds []firewall.Command
	switch tool {
	case firewall.UFW:
		for _, r := range rules {
			cmds = append(cmds, firewall.UFWAdd(r, first && len(st.Rules) > 0)...)
		}
	case firewall.Firewalld:
		for _, r := range rules {
			cmds = append(cmds, firewall.FirewalldAdd(r, st.Active)...)
		}
	case firewall.Nftables:
		if !st.Active && !first {
			return nil, failf("nftables keeps LCM's rules in its own table, which exists only while the firewall is enabled: enable it first")
		}
		all := append([]firewall.Rule{}, st.Rules...)
		if first {
			all = append(append([]firewall.Rule{}, rules...), all...)
		} else {
			all = append(all, rules...)
		}
		cmds = append(cmds, firewall.NftApply(all))
	}
	return cmds, nil
}

func removeCmds(tool string, st firewall.State, rules []firewall.Rule) []firewall.Command {
	var cmds []firewall.Command
	switch tool {
	case firewall.UFW:
		for _, r := range rules {
			cmds = append(cmds, firewall.UFWRemove(r)...)
		}
	case firewall.Firewalld:
		for _, r := range rules {
			cmds = append(cmds, firewall.FirewalldRemove(r, st.Active)...)
		}
	case firewall.Nftables:
		var keep []firewall.Rule
		for _, x := range st.Rules {
			drop := false
			for _, r := range rules {
				drop = drop || x.Key() == r.Key()
			}
			if !drop {
				keep = append(keep, x)
			}
		}
		cmds = append(cmds, firewall.NftApply(keep))
	}
	return cmds
}

// Run implements Action.
func (FirewallJob) Run(ctx context.Context, env *Env) (Result, error) {
	var p FirewallParams
	if len(env.Params) > 0 {
		if err := json.Unmarshal(env.Params, &p); err != nil {
			return Result{}, failf("bad parameters: %v", err)
		}
	}
	for i := range p.Rules {
		if err := p.Rules[i].Validate(); err != nil {
			return Result{}, failf("rule %d: %v", i+1, err)
		}
	}
	out := env.Out
	if out == nil {
		out = io.Discard
	}
	ex := env.Exec
	tool, err := detectFirewall(ctx, ex, out)
	if err != nil {
		return Result{}, err
	}
	if tool == "" {
		return Result{}, failf("no firewall tool (ufw, firewall-cmd or nft) is installed on the server")
	}
	fmt.Fprintf(out, "lcm: firewall tool on the server: %s\n", tool)
	pr := &FirewallProof{Tool: tool}
	res := Result{Firewall: pr}
	st, err := readFirewall(ctx, ex, out, tool)
	if err != nil {
		return res, err
	}
	readBack := func() error {
		s, err := readFirewall(ctx, ex, out, tool)
		if err != nil {
			pr.Proven, pr.Missing = false, "read-back failed: "+err.Error()
			return err
		}
		st = s
		pr.Proven, pr.Active, pr.Rules = true, s.Active, s.Rules
		return nil
	}
	pr.Proven, pr.Active, pr.Rules = true, st.Active, st.Rules
	switch p.Op {
	case domain.FirewallStatus:
		res.Message = fmt.Sprintf("%s is %s with %d rules (read back)", tool, activeWord(st.Active), len(st.Rules))
		return res, nil
	case domain.FirewallEnable:
		return enableFirewall(ctx, env, out, tool, st, pr, res, readBack)
	case domain.FirewallDisable:
		if err := runFw(ctx, ex, out, switchOff(tool)...); err != nil {
			return res, err
		}
		if err := readBack(); err != nil {
			return res, err
		}
		if st.Active {
			return res, failf("%s still reads back as active after disabling", tool)
		}
		res.Message = tool + " disabled (read back inactive)"
		return res, nil
	case domain.FirewallAdd:
		if len(p.Rules) == 0 {
			return res, failf("no rules to add")
		}
		var todo []firewall.Rule
		for _, r := range p.Rules {
			if !st.Has(r) {
				todo = append(todo, r)
			}
		}
		cmds, err := addCmds(tool, st, todo, false)
		if err != nil {
			return res, err
		}
		if err := runFw(ctx, ex, out, cmds...); err != nil {
			return res, err
		}
		if err := readBack(); err != nil {
			return res, err
		}
		for _, r := range p.Rules {
			if !st.Has(r) {
				return res, failf("rule %s does not read back after adding it", r)
			}
		}
		res.Message = fmt.Sprintf("%d rules added (read back)", len(p.Rules))
		return res, nil
	case domain.FirewallRemove:
		if len(p.Rules) == 0 {
			return res, failf("no rules to remove")
		}
		before := st
		var todo []firewall.Rule
		for _, r := range p.Rules {
			for _, x := range st.Rules {
				if x.Key() == r.Key() {
					todo = append(todo, x)
				}
			}
		}
		if err := runFw(ctx, ex, out, removeCmds(tool, st, todo)...); err != nil {
			return res, err
		}
		if err := readBack(); err != nil {
			return res, err
		}
		for _, r := range p.Rules {
			if st.Has(r) {
				return res, failf("rule %s still reads back after removing it", r)
			}
		}
		if st.Active {
			// A removed rule may have been what let LCM in: prove a fresh
			// login, else put the rules back.
			if err := proveFirewallLogin(ctx, env, out); err != nil {
				fmt.Fprintf(out, "lcm: no fresh login after removing the rules (%v); putting them back\n", err)
				cmds, cerr := addCmds(tool, st, todo, true)
				if cerr == nil {
					cerr = runFw(ctx, ex, out, cmds...)
				}
				_ = readBack()
				pr.RolledBack = cerr == nil && len(st.Rules) >= len(before.Rules)
				return res, failf("removing the rules cut LCM off (%v); rolled back: %v", err, pr.RolledBack)
			}
			pr.FreshLogin = true
		}
		res.Message = fmt.Sprintf("%d rules removed (read back)", len(p.Rules))
		return res, nil
	}
	return res, failf("unknown firewall operation %q", p.Op)
}

// enableFirewall allows LCM's own address to the SSH port first, switches
// the firewall on, reads it back and proves a fresh login; without that
// proof it switches the firewall off again in the same run.
func enableFirewall(ctx context.Context, env *Env, out io.Writer, tool string, st firewall.State, pr *FirewallProof, res Result, readBack func() error) (Result, error) {
	ex := env.Exec
	conn := sshConnection(ctx, ex, out)
	addr, err := netip.ParseAddr(conn.addr)
	if err != nil {
		return res, failf("LCM's own address %q (SSH_CONNECTION) is not an address", conn.addr)
	}
	var port int
	if _, err := fmt.Sscanf(conn.lport, "%d", &port); err != nil || port < 1 || port > 65535 {
		return res, failf("the SSH port %q (SSH_CONNECTION) is not a port", conn.lport)
	}
	addr = addr.Unmap()
	lcm := firewall.Rule{Port: port, Proto: firewall.TCP, Source: netip.PrefixFrom(addr, addr.BitLen()).String(), Comment: "lcm: management access"}
	pr.LCMRule = &lcm
	fmt.Fprintf(out, "lcm: allowing LCM's own address first: %s\n", lcm)
	if !firewall.Covers(st.Rules, addr, port) || (tool == firewall.Nftables && !st.Active) {
		cmds, err := addCmds(tool, st, []firewall.Rule{lcm}, true)
		if err != nil {
			return res, err
		}
		if err := runFw(ctx, ex, out, cmds...); err != nil {
			return res, err
		}
	}
	if tool != firewall.Nftables { // nft: applying the table is enabling it
		on := firewall.UFWEnable()
		if tool == firewall.Firewalld {
			on = firewall.FirewalldEnable()
		}
		if err := runFw(ctx, ex, out, on); err != nil {
			return res, err
		}
	}
	rollback := func(why string) (Result, error) {
		fmt.Fprintf(out, "lcm: %s; switching the firewall off again\n", why)
		err := runFw(ctx, ex, out, switchOff(tool)...)
		if rerr := readBack(); rerr == nil && err == nil && !pr.Active {
			pr.RolledBack = true
		}
		return res, failf("%s; the firewall was switched off again (rolled back: %v)", why, pr.RolledBack)
	}
	if err := readBack(); err != nil {
		return rollback("the firewall could not be read back: " + err.Error())
	}
	if !pr.Active {
		return res, failf("%s does not read back as active after enabling", tool)
	}
	if !firewall.Covers(pr.Rules, addr, port) {
		return rollback(fmt.Sprintf("no rule reads back that lets %s reach port %d", addr, port))
	}
	if err := proveFirewallLogin(ctx, env, out); err != nil {
		return rollback("a fresh connection could not log in with the firewall on: " + err.Error())
	}
	pr.FreshLogin = true
	res.Message = fmt.Sprintf("%s enabled: %d rules, LCM's own access (%s) proven by a fresh login", tool, len(pr.Rules), lcm)
	return res, nil
}

// Bounds of the fresh-login proof after a firewall change. Each says why.
const (
	// fwLoginTries: a firewall change needs no sshd restart, so a refused
	// or dropped login is not a blip; three tries ride out a busy host.
	fwLoginTries = 3
	fwLoginPause = 500 * time.Millisecond
	// fwLoginDial: dropped packets make a dial hang; an SSH handshake on
	// a reachable host takes milliseconds, 5 s is generous.
	fwLoginDial = 5 * time.Second
)

// proveFirewallLogin is the hardening's fresh-login proof (a new
// connection with the management key reaches sudo), bounded for a
// firewall that may drop packets.
func proveFirewallLogin(ctx context.Context, env *Env, out io.Writer) error {
	return proveFreshLoginWith(ctx, env, out, fwLoginTries, fwLoginPause, fwLoginDial)
}

func activeWord(a bool) string {
	if a {
		return "active"
	}
	return "inactive"
}

// Run implements Action.
func (ListeningPortsScan) Run(ctx context.Context, env *Env) (Result, error) {
	out := env.Out
	if out == nil {
		out = io.Discard
	}
	ex := env.Exec
	scan := &PortsScan{}
	res := Result{Ports: scan}
	raw, code, err := capture(ctx, ex, out, remote.Command{Cmd: "PATH=$PATH:/usr/sbin:/sbin; sudo -n ss -tulpnH 2>/dev/null"})
	if err != nil {
		return res, err
	}
	if code != 0 {
		// Restricted sudo mode: ss is not on the allowlist; without root
		// ss still lists every socket, only not other users' processes.
		fmt.Fprintln(out, "lcm: sudo ss is not allowed; listing without root (processes of other users are not shown)")
		scan.Partial = true
		raw, code, err = capture(ctx, ex, out, remote.Command{Cmd: "PATH=$PATH:/usr/sbin:/sbin; ss -tulpnH"})
		if err != nil {
			return res, err
		}
		if code != 0 {
			return res, failf("ss -tulpnH exited with code %d (is iproute2 installed?)", code)
		}
	}
	socks, err := firewall.ParseListening(raw)
	if err != nil {
		return res, failf("reading ss output: %v", err)
	}
	scan.Sockets = socks
	var st *firewall.State
	if tool, err := detectFirewall(ctx, ex, out); err == nil && tool != "" {
		if s, err := readFirewall(ctx, ex, out, tool); err == nil {
			st = &s
			scan.Firewall = &FirewallProof{Proven: true, Tool: tool, Active: s.Active, Rules: s.Rules}
		} else {
			fmt.Fprintf(out, "lcm: the firewall could not be read (%v); exposure assumes none\n", err)
		}
	}
	firewall.Exposure(scan.Sockets, st)
	world := 0
	for _, s := range scan.Sockets {
		if s.Open == firewall.OpenWorld {
			world++
		}
	}
	res.Message = fmt.Sprintf("%d listening sockets, %d open to the world", len(socks), world)
	if scan.Partial {
		res.Message += "; process names of other users' sockets could not be read (sudo ss is not allowed, as in restricted sudo mode)"
	}
	return res, nil
}
