package firewall

import (
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"
)

func read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestValidateRule(t *testing.T) {
	for _, c := range []struct {
		in   Rule
		ok   bool
		want Rule
	}{
		{Rule{Port: 22}, true, Rule{Port: 22, Proto: TCP}},
		{Rule{Port: 80, PortEnd: 80, Proto: UDP}, true, Rule{Port: 80, Proto: UDP}},
		{Rule{Port: 8000, PortEnd: 8010, Proto: Any, Source: "10.1.2.3/8"}, true, Rule{Port: 8000, PortEnd: 8010, Proto: Any, Source: "10.0.0.0/8"}},
		{Rule{Port: 443, Source: "2001:db8::1"}, true, Rule{Port: 443, Proto: TCP, Source: "2001:db8::1/128"}},
		{Rule{Port: 443, Source: "::ffff:1.2.3.4"}, true, Rule{Port: 443, Proto: TCP, Source: "1.2.3.4/32"}},
		{Rule{Port: 0}, false, Rule{}},
		{Rule{Port: 65536}, false, Rule{}},
		{Rule{Port: 10, PortEnd: 9}, false, Rule{}},
		{Rule{Port: 10, Proto: "icmp"}, false, Rule{}},
		{Rule{Port: 10, Source: "example.org"}, false, Rule{}},
		{Rule{Port: 10, Source: "fe80::1%eth0"}, false, Rule{}},
		{Rule{Port: 10, Comment: "it's"}, false, Rule{}},
		{Rule{Port: 10, Comment: "a\nb"}, false, Rule{}},
		{Rule{Port: 10, Comment: strings.Repeat("x", 65)}, false, Rule{}},
	} {
		r := c.in
		err := r.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%+v: err %v, want ok %v", c.in, err, c.ok)
			continue
		}
		if c.ok && r != c.want {
			t.Errorf("%+v: normalised to %+v, want %+v", c.in, r, c.want)
		}
	}
}

func TestParseUFW(t *testing.T) {
	st, err := ParseUFWState(read(t, "ufw-status-verbose.txt"), read(t, "ufw-show-added.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Port: 22, Proto: TCP, Source: "198.18.16.1/32", Comment: "lcm: management"},
		{Port: 8000, PortEnd: 8010, Proto: UDP, Source: "10.0.0.0/8", Comment: "x y"},
		{Port: 80, Proto: Any},
		{Port: 443, Proto: TCP, Source: "2001:db8::/32"},
	}
	if !st.Active || !reflect.DeepEqual(st.Rules, want) {
		t.Fatalf("got %+v", st)
	}
	st, err = ParseUFWState("Status: inactive\n", read(t, "ufw-show-added-none.txt"))
	if err != nil || st.Active || len(st.Rules) != 0 {
		t.Fatalf("inactive: %+v %v", st, err)
	}
	if _, err := ParseUFWState("ERROR: You need to be root\n", ""); err == nil {
		t.Fatal("an error message parsed as a status")
	}
	// What LCM adds reads back as the same rule.
	for _, r := range []Rule{{Port: 22, Proto: TCP, Source: "198.18.16.1/32", Comment: "lcm"}, {Port: 53, Proto: Any}, {Port: 6000, PortEnd: 6010, Proto: Any}} {
		for _, c := range UFWAdd(r, false) {
			line := strings.Join(c.Args, " ")
			line = strings.Replace(line, "comment "+r.Comment, "comment '"+r.Comment+"'", 1)
			got, ok := parseUFWRule(line)
			if !ok {
				t.Fatalf("%q does not parse", line)
			}
			if r.Proto == Any && r.PortEnd > 0 {
				got.Proto = Any
			}
			if got.Key() != strings.Replace(r.Key(), "/32", "", 1) && got.Key() != r.Key() {
				t.Fatalf("%q reads back as %s, want %s", line, got.Key(), r.Key())
			}
		}
	}
}

func TestUFWCommands(t *testing.T) {
	got := UFWAdd(Rule{Port: 22, Proto: TCP, Source: "198.18.16.1/32", Comment: "lcm: management"}, true)
	want := []Command{{Args: []string{"ufw", "insert", "1", "allow", "from", "198.18.16.1/32", "to", "any", "port", "22", "proto", "tcp", "comment", "lcm: management"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	if got := UFWRemove(Rule{Port: 6000, PortEnd: 6010, Proto: Any}); len(got) != 2 || got[1].Args[len(got[1].Args)-1] != UDP {
		t.Fatalf("range any: %+v", got)
	}
}

func TestNft(t *testing.T) {
	rules, err := ParseNftTable(read(t, "nft-list-table.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Port: 22, Proto: TCP, Source: "198.18.16.1/32", Comment: "lcm: management"},
		{Port: 8000, PortEnd: 8010, Proto: UDP, Source: "10.0.0.0/8", Comment: "x y"},
		{Port: 80, Proto: TCP},
		{Port: 443, Proto: TCP, Source: "2001:db8::/32", Comment: "lcm"},
		{Port: 53, Proto: Any, Comment: "dns"},
	}
	if !reflect.DeepEqual(rules, want) {
		t.Fatalf("got %+v", rules)
	}
	// The rendered table holds each rule as nft prints it back.
	c := NftApply(want)
	for _, line := range strings.Split(read(t, "nft-list-table.txt"), "\n") {
		if !strings.Contains(c.Stdin, strings.TrimSpace(line)) {
			t.Errorf("rendered table lacks %q:\n%s", line, c.Stdin)
		}
	}
	if _, err := ParseNftTable("Error: No such file or directory\n"); err == nil {
		t.Fatal("no table parsed")
	}
}

func TestFirewalld(t *testing.T) {
	r := Rule{Port: 8000, PortEnd: 8010, Proto: Any, Source: "10.0.0.0/8"}
	// Stopped: firewall-cmd cannot reach the daemon, so the permanent
	// configuration is changed offline and nothing is reloaded.
	for _, cmds := range [][]Command{FirewalldAdd(r, false), FirewalldRemove(r, false)} {
		if len(cmds) != 2 {
			t.Fatalf("offline: %d commands, want one per protocol: %+v", len(cmds), cmds)
		}
		for _, c := range cmds {
			if c.Args[0] != "firewall-offline-cmd" || len(c.Args) != 2 || !strings.HasPrefix(c.Args[1], "--") {
				t.Fatalf("offline command %q", c.Args)
			}
		}
	}
	if got := FirewalldRulesOffline().Args; strings.Join(got, " ") != "firewall-offline-cmd --list-rich-rules" {
		t.Fatalf("offline listing %q", got)
	}
	cmds := FirewalldAdd(r, true)
	if last := cmds[len(cmds)-1].Args; strings.Join(last, " ") != "firewall-cmd --reload" {
		t.Fatalf("running: last command %q, want the reload", last)
	}
	var rich []string
	for _, c := range cmds[:len(cmds)-1] {
		rich = append(rich, strings.TrimPrefix(c.Args[2], "--add-rich-rule="))
	}
	st, err := ParseFirewalldState("running\n", strings.Join(rich, "\n")+"\n")
	if err != nil || !st.Active || len(st.Rules) != 1 || st.Rules[0] != r {
		t.Fatalf("round trip: %+v %v (rich %q)", st, err, rich)
	}
	if st, _ := ParseFirewalldState("not running\n", ""); st.Active {
		t.Fatal("not running is active")
	}
}

func TestParseListening(t *testing.T) {
	socks, err := ParseListening(read(t, "ss-tulpnH-testhost.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(socks) != 1 || socks[0] != (Socket{Proto: "tcp", Address: "198.18.16.2", Port: 22, Process: "sshd", PID: 685, Public: true}) {
		t.Fatalf("test host: %+v", socks)
	}
	socks, err = ParseListening(read(t, "ss-tulpnH-machine.txt"))
	if err != nil {
		t.Fatal(err)
	}
	by := map[int]Socket{}
	for _, s := range socks {
		by[s.Port] = s
	}
	if s := by[5432]; s.Process != "postgres" || s.Public || s.Address != "127.0.0.1" {
		t.Fatalf("postgres: %+v", s)
	}
	if s := by[2024]; s.Process != "" || !s.Public || s.Address != "0.0.0.0" {
		t.Fatalf("no process: %+v", s)
	}
	if s := by[6379]; s.Address != "127.0.0.1" && s.Address != "::1" {
		t.Fatalf("redis: %+v", s)
	}
	// Forms ss prints on other servers.
	more := "udp UNCONN 0 0 127.0.0.53%lo:53 0.0.0.0:* users:((\"systemd-resolve\",pid=512,fd=13))\n" +
		"udp UNCONN 0 0 [fe80::1]%eth0:546 [::]:* users:((\"dhclient\",pid=9,fd=6))\n" +
		"tcp LISTEN 0 4096 *:22 *:* users:((\"sshd\",pid=1,fd=3),(\"systemd\",pid=1,fd=50))\n" +
		"tcp LISTEN 0 511 [::]:80 [::]:*\n"
	socks, err = ParseListening(more)
	if err != nil {
		t.Fatal(err)
	}
	if socks[0].Public || socks[1].Address != "fe80::1" || !socks[1].Public || socks[2].Address != "*" || socks[2].Process != "sshd" || socks[3].Address != "::" || !socks[3].Public {
		t.Fatalf("%+v", socks)
	}
	for _, bad := range []string{"tcp LISTEN 0", "sctp LISTEN 0 1 1.2.3.4:1 *:*", "tcp LISTEN 0 1 nohost *:*", "tcp LISTEN 0 1 1.2.3.4:99999 *:*"} {
		if _, err := ParseListening(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestExposure(t *testing.T) {
	socks := []Socket{
		{Proto: "tcp", Address: "0.0.0.0", Port: 22, Public: true},
		{Proto: "tcp", Address: "0.0.0.0", Port: 80, Public: true},
		{Proto: "udp", Address: "0.0.0.0", Port: 8005, Public: true},
		{Proto: "tcp", Address: "127.0.0.1", Port: 5432},
		{Proto: "tcp", Address: "0.0.0.0", Port: 3306, Public: true},
	}
	Exposure(socks, nil)
	if socks[4].Open != OpenWorld || socks[3].Open != OpenLocal {
		t.Fatalf("no firewall: %+v", socks)
	}
	Exposure(socks, &State{Active: true, Rules: []Rule{{Port: 22, Proto: TCP, Source: "198.18.0.1/32"}, {Port: 80, Proto: Any}, {Port: 8000, PortEnd: 8010, Proto: UDP}}})
	got := []string{socks[0].Open, socks[1].Open, socks[2].Open, socks[3].Open, socks[4].Open}
	if !reflect.DeepEqual(got, []string{OpenRestricted, OpenWorld, OpenWorld, OpenLocal, OpenBlocked}) {
		t.Fatalf("active: %v", got)
	}
}

func TestCovers(t *testing.T) {
	a := netip.MustParseAddr("198.18.16.1")
	rules := []Rule{{Port: 22, Proto: UDP}, {Port: 20, PortEnd: 30, Proto: TCP, Source: "198.18.16.0/24"}}
	if !Covers(rules, a, 22) || Covers(rules, netip.MustParseAddr("198.18.17.1"), 22) || Covers(rules[:1], a, 22) {
		t.Fatal("covers")
	}
}

func TestParseDetect(t *testing.T) {
	for in, want := range map[string]string{"ufw\n": UFW, "firewalld": Firewalld, "nftables\n": Nftables, "none\n": "", "": ""} {
		if got := ParseDetect(in); got != want {
			t.Errorf("%q: %q", in, got)
		}
	}
}

func FuzzParseListening(f *testing.F) {
	f.Add(read(f, "ss-tulpnH-machine.txt"))
	f.Add(read(f, "ss-tulpnH-testhost.txt"))
	f.Add("udp UNCONN 0 0 [fe80::1]%eth0:546 [::]:* users:((\"d\",pid=9,fd=6))\n")
	f.Fuzz(func(t *testing.T, s string) {
		socks, err := ParseListening(s)
		if err != nil {
			return
		}
		for _, k := range socks {
			if k.Port < 0 || k.Port > 65535 || (k.Proto != "tcp" && k.Proto != "udp") || k.Address == "" {
				t.Fatalf("bad socket %+v", k)
			}
		}
		Exposure(socks, &State{Active: true, Rules: []Rule{{Port: 1, PortEnd: 65535, Proto: Any}}})
	})
}

func FuzzParseFirewallState(f *testing.F) {
	f.Add(read(f, "ufw-status-verbose.txt"), read(f, "ufw-show-added.txt"), read(f, "nft-list-table.txt"))
	f.Add("Status: inactive", "Added user rules\n(None)", "")
	f.Fuzz(func(t *testing.T, status, added, nft string) {
		check := func(rules []Rule) {
			for _, r := range rules {
				c := r
				if err := c.Validate(); err != nil {
					t.Fatalf("parsed an invalid rule %+v: %v", r, err)
				}
			}
		}
		if st, err := ParseUFWState(status, added); err == nil {
			check(st.Rules)
		}
		if rules, err := ParseNftTable(nft); err == nil {
			check(rules)
		}
		st, _ := ParseFirewalldState(status, added)
		check(st.Rules)
	})
}

func FuzzRuleValidate(f *testing.F) {
	f.Add(22, 0, "tcp", "198.18.0.1", "lcm: management")
	f.Add(8000, 8010, "any", "2001:db8::/32", "")
	f.Fuzz(func(t *testing.T, port, end int, proto, source, comment string) {
		r := Rule{Port: port, PortEnd: end, Proto: proto, Source: source, Comment: comment}
		if r.Validate() != nil {
			return
		}
		// A valid rule renders to commands whose arguments are free of
		// anything a shell or nft would read specially, and validates again.
		again := r
		if err := again.Validate(); err != nil || again != r {
			t.Fatalf("not idempotent: %+v → %+v (%v)", r, again, err)
		}
		for _, c := range append(UFWAdd(r, true), NftApply([]Rule{r})) {
			for _, a := range c.Args {
				if strings.ContainsAny(a, "\x00\n'\"") {
					t.Fatalf("argument %q", a)
				}
			}
			if strings.Count(c.Stdin, `"`)%2 != 0 {
				t.Fatalf("unbalanced quotes in %q", c.Stdin)
			}
		}
	})
}
