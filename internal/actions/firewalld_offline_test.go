package actions

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/firewall"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestFirewalldOfflineOnTestHost runs LCM's firewall job against a real
// firewalld 1.3 (Debian 12) that is stopped, as it is on a server before
// LCM enables it: status, add and remove go through firewall-offline-cmd
// into the permanent configuration and are read back with
// --list-rich-rules, in full and in restricted sudo mode (the allowlist
// holds firewall-offline-cmd). Host 17 shares the machine's network
// namespace, so the test never enables firewalld (and could not: the
// host has no D-Bus); firewall-offline-cmd writes firewalld's XML only,
// nothing reaches the machine's netfilter. Enabling a running firewalld is
// proven nowhere here (no systemd/D-Bus on any test host, docs/firewall.md).
func TestFirewalldOfflineOnTestHost(t *testing.T) {
	buildHelper(t)
	h := testutil.TestHostAt(t, socketHostIndex)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	root, env, out := joinedHost(t, h)
	ctx := context.Background()
	sh(t, root, "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends firewalld netbase >/tmp/lcm-fw.log 2>&1 || { tail -20 /tmp/lcm-fw.log; exit 1; }")
	if got := sh(t, root, "command -v ufw nft || true"); got != "" {
		t.Fatalf("ufw or nft on host 17 would be detected first: %q", got)
	}
	job := func(op string, rules ...firewall.Rule) Result {
		t.Helper()
		if op == domain.FirewallEnable || op == domain.FirewallDisable {
			t.Fatalf("%s must not run on a host in the machine's network namespace", op)
		}
		out.Reset()
		env.Params, _ = json.Marshal(FirewallParams{Op: op, Rules: rules})
		r, err := (FirewallJob{}).Run(ctx, env)
		if err != nil || r.Firewall == nil || !r.Firewall.Proven || r.Firewall.Tool != "firewalld" || r.Firewall.Active {
			t.Fatalf("%s: %v %+v\n%s", op, err, r.Firewall, out)
		}
		return r
	}
	web := firewall.Rule{Port: 8080, Proto: "tcp", Source: "192.0.2.0/24", Comment: "web"}
	dns := firewall.Rule{Port: 5300, PortEnd: 5310, Proto: "udp"}
	for _, mode := range []string{domain.SudoFull, domain.SudoRestricted} {
		if mode == domain.SudoRestricted {
			env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoRestricted})
			out.Reset()
			r, err := (RestrictSudo{}).Run(ctx, env)
			if err != nil || !containsStr(r.Sudo.Allowed, "/usr/bin/firewall-offline-cmd") || !containsStr(r.Sudo.Allowed, "/usr/bin/firewall-cmd") {
				t.Fatalf("restrict: %v %+v\n%s", err, r.Sudo, out)
			}
		}
		if r := job(domain.FirewallStatus); len(r.Firewall.Rules) != 0 {
			t.Fatalf("%s: rules before: %+v", mode, r.Firewall.Rules)
		}
		r := job(domain.FirewallAdd, web, dns)
		if !strings.Contains(out.String(), "firewall-offline-cmd --add-rich-rule=") {
			t.Fatalf("%s: add went not through firewall-offline-cmd:\n%s", mode, out)
		}
		got := normalizedRules(r.Firewall.Rules)
		if want := normalizedRules([]firewall.Rule{web, dns}); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: read back %+v, want %+v\n%s", mode, got, want, out)
		}
		// firewalld's own view of the permanent configuration.
		if rich := sh(t, root, "firewall-offline-cmd --list-rich-rules"); !strings.Contains(rich, `source address="192.0.2.0/24" port port="8080" protocol="tcp"`) ||
			!strings.Contains(rich, `port port="5300-5310" protocol="udp"`) {
			t.Fatalf("%s: firewall-offline-cmd lists:\n%s", mode, rich)
		}
		if r := job(domain.FirewallRemove, web, dns); len(r.Firewall.Rules) != 0 {
			t.Fatalf("%s: rules after remove: %+v", mode, r.Firewall.Rules)
		}
		if rich := sh(t, root, "firewall-offline-cmd --list-rich-rules"); strings.TrimSpace(rich) != "" {
			t.Fatalf("%s: left behind:\n%s", mode, rich)
		}
	}
}

// normalizedRules drops what a read-back cannot carry (firewalld's rich
// rules hold no comment) and validates like the job does.
func normalizedRules(rs []firewall.Rule) []firewall.Rule {
	out := []firewall.Rule{}
	for _, r := range rs {
		r.Comment = ""
		_ = r.Validate()
		out = append(out, r)
	}
	return out
}
