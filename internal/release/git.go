package release

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// Repo runs git in a working tree.
type Repo struct{ Dir string }

func (r Repo) git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Tags lists every tag, or only those reachable from HEAD.
func (r Repo) Tags(reachable bool) ([]string, error) {
	args := []string{"tag", "--list"}
	if reachable {
		args = append(args, "--merged", "HEAD")
	}
	out, err := r.git(args...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Branch is the current branch name ("" when detached).
func (r Repo) Branch() string {
	out, err := r.git("symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// CommitsSince lists the commits reachable from HEAD and not from the tag
// of last (all of HEAD's history when last is nil), newest first.
func (r Repo) CommitsSince(last *Version) ([]Commit, error) {
	rng := "HEAD"
	if last != nil {
		rng = last.Tag() + "..HEAD"
	}
	// Fields separated by NUL, records by RS: subjects and bodies may hold
	// anything else.
	out, err := r.git("log", "--no-merges", "--format=%H%x00%s%x00%b%x1e", rng)
	if err != nil {
		return nil, err
	}
	var cs []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		rec = strings.TrimLeft(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x00", 3)
		if len(f) < 3 {
			continue
		}
		cs = append(cs, Parse(f[0], f[1], f[2]))
	}
	return cs, nil
}

// Tag creates the annotated tag of v at HEAD. The commit must hold v in
// its VERSION file (write it, commit, then tag): a tag on a commit with
// another version would build packages that name the wrong version.
func (r Repo) Tag(v Version, message string) error {
	if got, err := r.git("show", "HEAD:VERSION"); err != nil || strings.TrimSpace(got) != v.String() {
		return fmt.Errorf("refusing to tag %s: the VERSION committed at HEAD is %q; write it and commit first (-write -tag does both)", v.Tag(), strings.TrimSpace(got))
	}
	_, err := r.git("tag", "-a", v.Tag(), "-m", message)
	return err
}

// Commit commits paths (and only them) with message.
func (r Repo) Commit(message string, paths ...string) error {
	if _, err := r.git(append([]string{"add", "--"}, paths...)...); err != nil {
		return err
	}
	_, err := r.git(append([]string{"commit", "--quiet", "-m", message, "--"}, paths...)...)
	return err
}

// PlanRepo prepares the channel's next version from the repository.
func PlanRepo(r Repo, channel string) (Plan, error) {
	all, err := r.Tags(false)
	if err != nil {
		return Plan{}, err
	}
	reachable, err := r.Tags(true)
	if err != nil {
		return Plan{}, err
	}
	p0, err := Prepare(channel, reachable, all, nil) // finds the last stable release
	if err != nil {
		return Plan{}, err
	}
	commits, err := r.CommitsSince(p0.Last)
	if err != nil {
		return Plan{}, err
	}
	return Prepare(channel, reachable, all, commits)
}
