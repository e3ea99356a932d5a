package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseAndBump(t *testing.T) {
	for _, c := range []struct {
		subject, body string
		typ, scope    string
		bump          Bump
	}{
		{"feat!: drop the v0 API", "", "feat", "", Major},
		{"fix!: refuse weak keys", "", "fix", "", Major},
		{"feat(auth)!: new token format", "", "feat", "auth", Major},
		{"fix(jobs): keep the final state", "BREAKING CHANGE: the state field is renamed", "fix", "jobs", Major},
		{"docs: explain", "Some text\nBREAKING CHANGE: config key renamed", "docs", "", Major},
		{"refactor!: store layout", "", "refactor", "", Major},
		{"feat: MCP listener", "", "feat", "", Minor},
		{"feat(web): page", "body without footer", "feat", "web", Minor},
		{"fix: a bug", "", "fix", "", Patch},
		{"perf(servers): faster", "", "perf", "servers", Patch},
		{"refactor(bus): share code", "", "refactor", "bus", Patch},
		{"docs: readme", "", "docs", "", None},
		{"test: more", "", "test", "", None},
		{"ci: run", "", "ci", "", None},
		{"chore: deps", "", "chore", "", None},
		{"build: nfpm", "", "build", "", None},
		{"style: gofmt", "", "style", "", None},
		{"revert: feat: x", "", "revert", "", None},
		{"Merge branch 'x'", "", "", "", None},
		{"feat:missing space", "", "", "", None},
		{"FEAT: upper case type", "", "feat", "", Minor},
		{"feat: mentions BREAKING CHANGE: in the subject only", "", "feat", "", Minor},
	} {
		got := Parse("abcdef0123", c.subject, c.body)
		if got.Type != c.typ || got.Scope != c.scope || BumpOf(got) != c.bump {
			t.Errorf("%q: type %q scope %q bump %s, want %q %q %s", c.subject, got.Type, got.Scope, BumpOf(got), c.typ, c.scope, c.bump)
		}
	}
}

func TestHighestDecides(t *testing.T) {
	cs := []Commit{Parse("1", "docs: a", ""), Parse("2", "fix: b", ""), Parse("3", "feat: c", ""), Parse("4", "test: d", "")}
	if Highest(cs) != Minor {
		t.Fatalf("highest %s", Highest(cs))
	}
	if Highest(append(cs, Parse("5", "perf: e", "BREAKING CHANGE: x"))) != Major {
		t.Fatal("a breaking footer must win")
	}
	if Highest(nil) != None {
		t.Fatal("no commits, no release")
	}
}

func TestVersions(t *testing.T) {
	for in, want := range map[string]string{"1.2.3": "1.2.3", "v0.1.0": "0.1.0", "2.0.0-beta.3": "2.0.0-beta.3"} {
		v, err := ParseVersion(in)
		if err != nil || v.String() != want {
			t.Errorf("%s → %v %v", in, v, err)
		}
	}
	for _, bad := range []string{"1.2", "01.2.3", "1.2.3-beta.0", "1.2.3-rc.1", "1.2.3-beta", "x"} {
		if _, err := ParseVersion(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	v, _ := ParseVersion("1.4.0-beta.2")
	if v.Debian() != "1.4.0~beta.2" {
		t.Fatalf("Debian form %s", v.Debian())
	}
	order := []string{"0.9.9", "1.0.0-beta.1", "1.0.0-beta.2", "1.0.0-beta.10", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	for i := range order {
		for j := range order {
			a, _ := ParseVersion(order[i])
			b, _ := ParseVersion(order[j])
			if a.Less(b) != (i < j) {
				t.Errorf("%s < %s = %v", a, b, a.Less(b))
			}
		}
	}
	// Debian's own ordering agrees that ~beta sorts before the release.
	if dpkg, err := exec.LookPath("dpkg"); err == nil {
		for i := 0; i+1 < len(order); i++ {
			a, _ := ParseVersion(order[i])
			b, _ := ParseVersion(order[i+1])
			if err := exec.Command(dpkg, "--compare-versions", a.Debian(), "lt", b.Debian()).Run(); err != nil {
				t.Errorf("dpkg: %s is not lower than %s", a.Debian(), b.Debian())
			}
		}
	}
}

// gitRepo makes a throwaway repository with one commit per subject (a
// body after "\n\n") and the given tags at the given commit numbers.
type gitRepo struct {
	t   *testing.T
	dir string
	n   int
}

func newRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.run("init", "-q", "-b", "community")
	r.run("config", "user.email", "dev@example.test")
	r.run("config", "user.name", "Dev")
	r.run("config", "commit.gpgsign", "false")
	r.run("config", "tag.gpgsign", "false")
	return r
}

func (r *gitRepo) run(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (r *gitRepo) commit(msgs ...string) {
	r.t.Helper()
	for _, m := range msgs {
		r.n++
		if err := os.WriteFile(filepath.Join(r.dir, "f.txt"), []byte(strings.Repeat("x", r.n)), 0o644); err != nil {
			r.t.Fatal(err)
		}
		r.run("add", "f.txt")
		r.run("commit", "-q", "-m", m)
	}
}

func (r *gitRepo) plan(channel string) Plan {
	r.t.Helper()
	p, err := PlanRepo(Repo{Dir: r.dir}, channel)
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// TestEveryRowOnARealRepository: each row of the spec's table, on a
// throwaway git repository whose last release is v1.2.3.
func TestEveryRowOnARealRepository(t *testing.T) {
	for _, c := range []struct {
		name    string
		commits []string
		next    string
		release bool
	}{
		{"feat! → major", []string{"fix: a", "feat!: b"}, "2.0.0", true},
		{"fix! → major", []string{"fix!: a"}, "2.0.0", true},
		{"BREAKING CHANGE in the body → major", []string{"chore: a", "refactor: b\n\nBREAKING CHANGE: layout"}, "2.0.0", true},
		{"feat → minor", []string{"fix: a", "feat: b", "docs: c"}, "1.3.0", true},
		{"fix → patch", []string{"fix: a", "docs: b"}, "1.2.4", true},
		{"perf → patch", []string{"perf: a"}, "1.2.4", true},
		{"refactor → patch", []string{"refactor: a", "test: b"}, "1.2.4", true},
		{"docs, test, ci, chore, build, style, revert → no release", []string{"docs: a", "test: b", "ci: c", "chore: d", "build: e", "style: f", "revert: g"}, "1.2.3", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRepo(t)
			r.commit("feat: first", "fix: before the release")
			r.run("tag", "-a", "v1.2.3", "-m", "1.2.3")
			r.commit(c.commits...)
			p := r.plan("community")
			if p.Next.String() != c.next || p.Release != c.release || len(p.Commits) != len(c.commits) {
				t.Fatalf("next %s release %v (%s), %d commits; want %s %v %d", p.Next, p.Release, p.Reason, len(p.Commits), c.next, c.release, len(c.commits))
			}
		})
	}
}

func TestChannelsAndTags(t *testing.T) {
	r := newRepo(t)
	r.commit("feat: first")
	// No release yet: the first version comes from all commits.
	if p := r.plan("community"); p.Last != nil || p.Next.String() != "0.1.0" || !p.Release {
		t.Fatalf("first release: %+v", p)
	}
	r.run("tag", "-a", "v0.1.0", "-m", "0.1.0")
	r.commit("feat: second")
	// beta numbers pre-releases of the next version.
	if p := r.plan("beta"); p.Next.String() != "0.2.0-beta.1" || !p.Release || p.Next.Debian() != "0.2.0~beta.1" {
		t.Fatalf("beta: %+v", p)
	}
	r.run("tag", "-a", "v0.2.0-beta.1", "-m", "beta")
	r.commit("fix: third")
	if p := r.plan("beta"); p.Next.String() != "0.2.0-beta.2" {
		t.Fatalf("second beta: %s", p.Next)
	}
	// A pre-release is not the last release: community prepares 0.2.0.
	if p := r.plan("community"); p.Last.String() != "0.1.0" || p.Next.String() != "0.2.0" || !p.Release {
		t.Fatalf("community after betas: %+v", p)
	}
	// develop prepares but never releases.
	if p := r.plan("develop"); p.Next.String() != "0.2.0" || p.Release {
		t.Fatalf("develop: %+v", p)
	}
	r.run("tag", "-a", "v0.2.0", "-m", "0.2.0", "HEAD~1")
	if p := r.plan("enterprise"); p.Last.String() != "0.2.0" || p.Next.String() != "0.2.1" || !p.Release || len(p.Commits) != 1 {
		t.Fatalf("enterprise: %+v", p)
	}
	// A release is created only when the prepared version has no tag yet:
	// another branch released 0.3.0 already; this one prepares 0.3.0 too.
	r.run("checkout", "-q", "-b", "enterprise", "v0.2.0")
	r.commit("feat: enterprise feature")
	r.run("checkout", "-q", "community")
	r.commit("feat: community feature")
	r.run("tag", "-a", "v0.3.0", "-m", "0.3.0")
	r.run("checkout", "-q", "enterprise")
	if p := r.plan("enterprise"); p.Next.String() != "0.3.0" || p.Release || !p.Existing {
		t.Fatalf("prepared version tagged on another branch: %+v", p)
	}
	if _, err := PlanRepo(Repo{Dir: r.dir}, "stable"); err == nil {
		t.Fatal("an unknown channel was accepted")
	}
}

func TestPreparedVersionTaggedAlready(t *testing.T) {
	tags := []string{"v1.0.0", "v1.1.0"}
	p, err := Prepare("community", tags, tags, []Commit{Parse("1", "feat: x", "")})
	if err != nil {
		t.Fatal(err)
	}
	// The last release is 1.1.0, so 1.2.0 is prepared and free.
	if !p.Release || p.Next.String() != "1.2.0" {
		t.Fatalf("%+v", p)
	}
	tags = []string{"v1.0.0", "v1.1.0-beta.1", "v1.1.0"}
	p, _ = Prepare("community", tags, tags, []Commit{Parse("1", "fix: x", "")})
	if p.Next.String() != "1.1.1" {
		t.Fatalf("%+v", p)
	}
	tags = []string{"v1.0.0", "v1.1.0-beta.1"}
	p, _ = Prepare("beta", tags, tags, []Commit{Parse("1", "feat: x", "")})
	if p.Next.String() != "1.1.0-beta.2" || !p.Release {
		t.Fatalf("%+v", p)
	}
	// A tag that exists for the prepared version stops the release.
	p, _ = Prepare("community", []string{"v1.0.0"}, []string{"v1.0.0", "v1.1.0"}, []Commit{Parse("1", "feat: x", "")})
	if p.Next.String() != "1.1.0" || p.Release || !p.Existing {
		t.Fatalf("%+v", p)
	}
}

func TestChangelogGroups(t *testing.T) {
	p, _ := Prepare("community", nil, nil, []Commit{
		Parse("aaaaaaaaa", "feat(mcp): listener", ""), Parse("bbbbbbbbb", "fix: bug", ""),
		Parse("ccccccccc", "feat!: breaking", ""), Parse("ddddddddd", "Merge stuff", ""), Parse("eeeeeeeee", "perf: fast", ""),
	})
	log := Changelog(p, "2026-11-24")
	for _, want := range []string{"## 1.0.0 (2026-11-24, community)", "### Breaking changes\n\n- breaking (ccccccc)",
		"### Features\n\n- **mcp:** listener (aaaaaaa)", "### Fixes\n\n- bug (bbbbbbb)", "### Performance", "### Other\n\n- Merge stuff (ddddddd)"} {
		if !strings.Contains(log, want) {
			t.Errorf("changelog lacks %q:\n%s", want, log)
		}
	}
	if strings.Index(log, "Breaking") > strings.Index(log, "Features") {
		t.Error("breaking changes must come first")
	}
}
