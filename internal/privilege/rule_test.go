package privilege

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/helper"
)

func c(argv ...string) Rule { return Rule{Kind: KindCommand, Argv: argv} }

func TestValidateRejections(t *testing.T) {
	cases := []struct {
		name string
		rule Rule
		code string
	}{
		{"relative command", c("systemctl", "restart", "nginx"), CodeRelativePath},
		{"dot relative", c("./bin/tool", "x"), CodeRelativePath},
		{"not clean", c("/usr/bin/../bin/systemctl", "status", "ssh"), CodePathNotClean},
		{"double slash", c("/usr//bin/systemctl", "status", "ssh"), CodePathNotClean},
		{"star", c("/usr/bin/systemctl", "restart", "*"), CodeWildcard},
		{"question mark", c("/usr/bin/systemctl", "restart", "ngin?"), CodeWildcard},
		{"bracket", c("/usr/bin/systemctl", "restart", "nginx[12]"), CodeWildcard},
		{"star in path", c("/usr/bin/*", "x"), CodeWildcard},
		{"semicolon", c("/usr/bin/systemctl", "status", "ssh;id"), CodeShellMeta},
		{"pipe", c("/usr/bin/du", "|", "/usr/bin/sh"), CodeShellMeta},
		{"dollar", c("/usr/bin/du", "$HOME"), CodeShellMeta},
		{"backtick", c("/usr/bin/du", "`id`"), CodeShellMeta},
		{"redirect", c("/usr/bin/du", ">/etc/passwd"), CodeShellMeta},
		{"ampersand", c("/usr/bin/du", "a&b"), CodeShellMeta},
		{"quote", c("/usr/bin/du", `"x"`), CodeShellMeta},
		{"hash", c("/usr/bin/du", "#x"), CodeShellMeta},
		{"backslash", c("/usr/bin/du", `a\b`), CodeShellMeta},
		{"bang", c("/usr/bin/du", "!x"), CodeShellMeta},
		{"newline", c("/usr/bin/du", "a\nb"), CodeWhitespace},
		{"control", c("/usr/bin/du", "a\x01b"), CodeShellMeta},
		{"comma", c("/usr/bin/systemctl", "restart", "a,b"), CodeComma},
		{"space", c("/usr/bin/systemctl", "restart nginx"), CodeWhitespace},
		{"bare systemctl", c("/usr/bin/systemctl"), CodeBareCommand},
		{"systemctl only options", c("/bin/systemctl", "--no-pager", "-l"), CodeBareCommand},
		{"bare apt-get", c("/usr/bin/apt-get"), CodeBareCommand},
		{"apt-get only option", c("/usr/bin/apt-get", "-y"), CodeBareCommand},
		{"bare docker", c("/usr/bin/docker"), CodeBareCommand},
		{"ALL", c("ALL"), CodeAllCommand},
		{"all lower", c("all"), CodeAllCommand},
		{"empty", c(), CodeEmpty},
		{"empty argument", c("/usr/bin/du", ""), CodeEmpty},
		{"sudoedit as command", c("/usr/bin/sudoedit", "/etc/hosts"), CodeSudoedit},
		{"shell", c("/bin/sh"), CodeDangerous},
		{"bash -c", c("/usr/bin/bash", "-c", "id"), CodeDangerous},
		{"python3", c("/usr/bin/python3", "/opt/x.py"), CodeDangerous},
		{"python3.11", c("/usr/bin/python3.11"), CodeDangerous},
		{"perl5", c("/usr/bin/perl5.36.0"), CodeDangerous},
		{"find", c("/usr/bin/find", "/var/log"), CodeDangerous},
		{"tee", c("/usr/bin/tee", "/etc/passwd"), CodeDangerous},
		{"dd", c("/bin/dd", "if=/dev/zero"), CodeDangerous},
		{"chmod", c("/bin/chmod", "777", "/etc"), CodeDangerous},
		{"env", c("/usr/bin/env"), CodeDangerous},
		{"less", c("/usr/bin/less", "/var/log/syslog"), CodeDangerous},
		{"systemctl edit", c("/usr/bin/systemctl", "edit", "nginx"), CodeDangerous},
		{"docker exec", c("/usr/bin/docker", "exec", "web", "id"), CodeDangerous},
		{"apt-get install", c("/usr/bin/apt-get", "install", "nginx"), CodeDangerous},
		{"bad run-as", Rule{Kind: KindCommand, Argv: []string{"/usr/bin/du"}, RunAs: "Root!"}, CodeBadRunAs},
		{"edit relative", Rule{Kind: KindEdit, Path: "etc/hosts"}, CodeRelativePath},
		{"edit wildcard", Rule{Kind: KindEdit, Path: "/etc/nginx/*.conf"}, CodeWildcard},
		{"acl perms", Rule{Kind: KindACL, Path: "/srv/www", Perms: "w"}, CodeBadPerms},
		{"acl root", Rule{Kind: KindACL, Path: "/", Perms: "r"}, CodePathNotClean},
		{"unknown kind", Rule{Kind: "script"}, CodeUnknownKind},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := Validate(Normalize(tc.rule))
			if e == nil {
				t.Fatalf("accepted %+v", tc.rule)
			}
			if e.Code != tc.code {
				t.Fatalf("code %q (%s), want %q", e.Code, e.Message, tc.code)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for _, r := range []Rule{
		c("/usr/bin/systemctl", "status", "ssh"),
		c("/usr/bin/journalctl", "-u", "nginx", "--since=today"),
		c("/usr/sbin/nginx", "-t"),
		c("/usr/bin/docker", "restart", "web"),
		c("/usr/bin/apt-get", "update"),
		c("/usr/bin/certbot", "renew"),
		c("/usr/bin/unattended-upgrade"),
		c("/usr/bin/pg_dump", "--file=/var/backups/a:b.dump", "app"),
		{Kind: KindCommand, Argv: []string{"/bin/sh", "/opt/x"}, Confirmed: true},
		{Kind: KindCommand, Argv: []string{"/usr/bin/psql"}, RunAs: "postgres"},
		{Kind: KindEdit, Path: "/etc/nginx/nginx.conf"},
		{Kind: KindACL, Path: "/var/www/html", Perms: "rwx"},
	} {
		if e := Validate(Normalize(r)); e != nil {
			t.Errorf("%+v rejected: %v", r, e)
		}
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want Rule }{
		{c("/usr/bin/systemctl", "status", "ssh"), c("/usr/bin/systemctl", "--no-pager", "status", "ssh")},
		{c("/usr/bin/journalctl", "-u", "ssh"), c("/usr/bin/journalctl", "--no-pager", "-u", "ssh")},
		{c("/usr/bin/systemctl", "status", "--no-pager", "ssh"), c("/usr/bin/systemctl", "status", "--no-pager", "ssh")},
		{c("/usr/bin/vim", "/etc/hosts"), Rule{Kind: KindEdit, Path: "/etc/hosts"}},
		{c("/bin/nano", "/etc/nginx/nginx.conf"), Rule{Kind: KindEdit, Path: "/etc/nginx/nginx.conf"}},
		{Rule{Argv: []string{"/usr/sbin/nginx", "-t"}, RunAs: "root"}, c("/usr/sbin/nginx", "-t")},
	}
	for _, tc := range cases {
		if got := Normalize(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Normalize(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	// An editor without a file (or with options) stays a dangerous command.
	if e := Validate(Normalize(c("/usr/bin/vim"))); e == nil || e.Code != CodeDangerous {
		t.Fatalf("bare vim: %v", e)
	}
}

func TestValidateAllIndexes(t *testing.T) {
	_, errs := ValidateAll([]Rule{c("/usr/sbin/nginx", "-t"), c("nginx"), c("/usr/bin/systemctl")})
	if len(errs) != 2 || errs[0].Index != 1 || errs[0].Code != CodeRelativePath || errs[1].Index != 2 || errs[1].Code != CodeBareCommand {
		t.Fatalf("errs %+v", errs)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{"Web admins": "web-admins", "  DB / Ops  ": "db-ops", "!!!": "profile",
		"A very long profile name that goes on": "a-very-long-profile-nam"} {
		got := Slugify(in)
		if got != want || !ValidSlug(got) {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a.b", "a_b", strings.Repeat("a", 24)} {
		if ValidSlug(bad) {
			t.Errorf("ValidSlug(%q)", bad)
		}
	}
}

// visudoCheck runs `visudo -cf` on text: the same check provisioning runs
// on the server before a file goes into /etc/sudoers.d.
func visudoCheck(t *testing.T, text string) {
	t.Helper()
	bin, err := exec.LookPath("visudo")
	if err != nil {
		for _, p := range []string{"/usr/sbin/visudo", "/sbin/visudo"} {
			if _, serr := os.Stat(p); serr == nil {
				bin = p
			}
		}
	}
	if bin == "" {
		t.Skip("visudo is not installed")
	}
	f := filepath.Join(t.TempDir(), "lcm-prof-test")
	if err := os.WriteFile(f, []byte(text), 0o440); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-cf", f).CombinedOutput()
	if err != nil {
		t.Fatalf("visudo -cf rejected:\n%s\n%s", text, out)
	}
}

func TestRenderSudoers(t *testing.T) {
	rules, errs := ValidateAll([]Rule{
		c("/usr/bin/systemctl", "status", "ssh"),
		c("/usr/bin/journalctl", "-u", "nginx", "--since=today"),
		c("/usr/bin/unattended-upgrade"),
		{Kind: KindCommand, Argv: []string{"/usr/bin/pg_dump", "--file=/var/backups/a:b.dump", "app"}, RunAs: "postgres"},
		{Kind: KindEdit, Path: "/etc/nginx/nginx.conf"},
		{Kind: KindACL, Path: "/var/www/html", Perms: "rwx"},
	})
	if errs != nil {
		t.Fatal(errs)
	}
	got, err := Render("web-ops", `Web "ops"`, rules)
	if err != nil {
		t.Fatal(err)
	}
	want := `# Managed by LCM: privilege profile "Web ops" (group lcm-prof-web-ops). Changes here are overwritten.
%lcm-prof-web-ops ALL=(root) NOPASSWD: /usr/bin/systemctl --no-pager status ssh
%lcm-prof-web-ops ALL=(root) NOPASSWD: /usr/bin/journalctl --no-pager -u nginx --since\=today
%lcm-prof-web-ops ALL=(root) NOPASSWD: /usr/bin/unattended-upgrade ""
%lcm-prof-web-ops ALL=(postgres) NOPASSWD: /usr/bin/pg_dump --file\=/var/backups/a\:b.dump app
%lcm-prof-web-ops ALL=(root) NOPASSWD: sudoedit /etc/nginx/nginx.conf
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	visudoCheck(t, got)
	for _, line := range strings.Split(strings.TrimSpace(got), "\n")[1:] {
		if !strings.HasPrefix(line, "%lcm-prof-web-ops ") || strings.HasSuffix(line, " ALL") || strings.Contains(line, "NOPASSWD: ALL") {
			t.Errorf("line %q is not issued to the profile group or has ALL as command", line)
		}
	}
	// Render refuses what validation refuses.
	if _, err := Render("web-ops", "x", []Rule{c("/bin/sh")}); err == nil {
		t.Fatal("Render accepted an unconfirmed shell")
	}
	if _, err := Render("Bad Slug", "x", nil); err == nil {
		t.Fatal("Render accepted a bad slug")
	}
	empty, err := Render("nobody", "Standard", nil)
	if err != nil {
		t.Fatal(err)
	}
	visudoCheck(t, empty)
}

// TestBuiltinBlocksEveryFamily renders every built-in block on every family
// with its example parameters: each supported family gives valid rules and
// a sudoers file visudo accepts; an unsupported one says so by code.
func TestBuiltinBlocksEveryFamily(t *testing.T) {
	bs := Builtins()
	if len(bs) < 20 {
		t.Fatalf("only %d built-in blocks", len(bs))
	}
	seen := map[string]bool{}
	for _, b := range bs {
		if seen[b.Slug] || !ValidSlug(b.Slug) {
			t.Fatalf("slug %q twice or invalid", b.Slug)
		}
		seen[b.Slug] = true
		if e := CheckBlock(b); e != nil {
			t.Fatalf("%s: %v", b.Slug, e)
		}
		if len(b.SupportedFamilies()) < 3 {
			t.Errorf("%s: only %v", b.Slug, b.SupportedFamilies())
		}
		for _, fam := range Families {
			t.Run(b.Slug+"/"+fam, func(t *testing.T) {
				rules, e := b.Expand(fam, b.ExampleParams())
				if _, ok := b.Variant(fam); !ok {
					if e == nil || e.Code != CodeNoVariant {
						t.Fatalf("unsupported family: %v", e)
					}
					return
				}
				if e != nil {
					t.Fatal(e)
				}
				for _, r := range rules {
					if Dangerous(r) != "" {
						t.Errorf("built-in rule %+v is dangerous", r)
					}
					if r.Kind == KindCommand && (strings.HasSuffix(r.Argv[0], "/systemctl") || strings.HasSuffix(r.Argv[0], "/journalctl")) && r.Argv[1] != "--no-pager" {
						t.Errorf("%v lacks --no-pager", r.Argv)
					}
				}
				text, err := Render("blk-"+fam, b.Name, rules)
				if err != nil {
					t.Fatal(err)
				}
				visudoCheck(t, text)
			})
		}
	}
}

func TestExpandParams(t *testing.T) {
	var b Block
	for _, x := range Builtins() {
		if x.Slug == "service-restart" {
			b = x
		}
	}
	rules, e := b.Expand("apt", map[string]string{"unit": "nginx.service"})
	if e != nil || !reflect.DeepEqual(rules[0].Argv, []string{"/usr/bin/systemctl", "--no-pager", "restart", "nginx.service"}) {
		t.Fatalf("%v %v", rules, e)
	}
	rules, e = b.Expand("apk", map[string]string{"unit": "nginx"})
	if e != nil || !reflect.DeepEqual(rules[0].Argv, []string{"/sbin/rc-service", "nginx", "restart"}) {
		t.Fatalf("%v %v", rules, e)
	}
	for _, tc := range []struct {
		params map[string]string
		fam    string
		code   string
	}{
		{map[string]string{}, "apt", CodeMissingParam},
		{map[string]string{"unit": "a b"}, "apt", CodeInvalidParam},
		{map[string]string{"unit": "x;id"}, "apt", CodeInvalidParam},
		{map[string]string{"unit": "*"}, "apt", CodeInvalidParam},
		{map[string]string{"unit": "../x"}, "apt", CodeInvalidParam},
		{map[string]string{"unit": "nginx", "other": "x"}, "apt", CodeUnknownParam},
		{map[string]string{"unit": "nginx"}, "solaris", CodeUnknownFamily},
	} {
		if _, e := b.Expand(tc.fam, tc.params); e == nil || e.Code != tc.code {
			t.Errorf("%v on %s: %v, want %s", tc.params, tc.fam, e, tc.code)
		}
	}
}

func TestCheckBlockRejects(t *testing.T) {
	ok := Block{Name: "x", Params: []Param{{Name: "unit", Kind: ParamName}}, Variants: map[string][]Rule{"*": {c("/usr/bin/systemctl", "restart", "{unit}")}}}
	if e := CheckBlock(ok); e != nil {
		t.Fatal(e)
	}
	for code, b := range map[string]Block{
		CodeUnknownParam:    {Name: "x", Variants: map[string][]Rule{"*": {c("/usr/bin/systemctl", "restart", "{unit}")}}},
		CodeUnknownFamily:   {Name: "x", Variants: map[string][]Rule{"solaris": {c("/usr/sbin/nginx", "-t")}}},
		CodeNoVariant:       {Name: "x"},
		CodeTemplateInvalid: {Name: "x", Params: []Param{{Name: "Unit", Kind: ParamName}}, Variants: map[string][]Rule{"*": {c("/usr/sbin/nginx", "-t")}}},
		CodeBareCommand:     {Name: "x", Variants: map[string][]Rule{"apt": {c("/usr/bin/systemctl")}}},
		CodeDangerous:       {Name: "x", Variants: map[string][]Rule{"apt": {c("/bin/bash")}}},
	} {
		if e := CheckBlock(b); e == nil || e.Code != code {
			t.Errorf("want %s, got %v", code, e)
		}
	}
}

// TestDangerousListDocumented keeps docs/privilege-profiles.md in step with
// the one list of dangerous programs.
func TestDangerousListDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/privilege-profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range DangerousPrograms() {
		if !strings.Contains(string(doc), "`"+p[0]+"`") {
			t.Errorf("docs/privilege-profiles.md does not list `%s`", p[0])
		}
	}
}

// Budget from the issue: validating a 200-rule profile takes at most 5 ms.
// BenchmarkValidate200Rules measures it (docs/benchmarks.md); this test
// proves the 200 rules pass and logs the best of 20 runs, without a
// timing assert (a loaded shared machine must not fail the suite).
func TestValidate200RulesBudget(t *testing.T) {
	rules := make([]Rule, 200)
	for i := range rules {
		rules[i] = c("/usr/bin/systemctl", "restart", "unit"+strings.Repeat("x", i%20)+".service")
	}
	best := time.Hour
	for n := 0; n < 20; n++ {
		start := time.Now()
		norm, errs := ValidateAll(rules)
		if errs != nil {
			t.Fatal(errs)
		}
		if _, err := Render("budget", "b", norm); err != nil {
			t.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	t.Logf("200 rules validated and rendered in %s (best of 20; budget 5 ms, measured by BenchmarkValidate200Rules)", best)
}

func BenchmarkValidate200Rules(b *testing.B) {
	rules := make([]Rule, 200)
	for i := range rules {
		rules[i] = c("/usr/bin/systemctl", "restart", "unit"+strings.Repeat("x", i%20)+".service")
	}
	for b.Loop() {
		if _, errs := ValidateAll(rules); errs != nil {
			b.Fatal(errs)
		}
	}
}

// TestRunAsAgreesWithTheHelper: a run-as user LCM accepts is one lcm-helper
// accepts when it writes the sudoers file in restricted mode, and the
// other way round (a dot, accepted before, was refused by the helper).
func TestRunAsAgreesWithTheHelper(t *testing.T) {
	for u, ok := range map[string]bool{"postgres": true, "www-data": true, "_svc": true, "a1": true, "john.doe": false, "Root": false,
		"-x": false, "1a": false, "": false, "a b": false, strings.Repeat("a", 32): true, strings.Repeat("a", 33): false} {
		r := Rule{Kind: KindCommand, Argv: []string{"/usr/bin/du"}, RunAs: u}
		if u == "" {
			continue // no run-as: root
		}
		err := Validate(r)
		if (err == nil) != ok || helper.ValidUser(u) != ok {
			t.Errorf("%q: LCM %v, helper %v, want %v", u, err, helper.ValidUser(u), ok)
		}
	}
}

func FuzzRunAsAgreesWithTheHelper(f *testing.F) {
	for _, s := range []string{"postgres", "john.doe", "_a", "A", "a-", strings.Repeat("z", 33)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if validRunAs(u) != helper.ValidUser(u) {
			t.Fatalf("%q: LCM %v, helper %v", u, validRunAs(u), helper.ValidUser(u))
		}
	})
}
