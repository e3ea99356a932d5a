package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestWriteAndTag: on a throwaway repository the tool writes VERSION and
// CHANGELOG.md, commits them, and tags that commit: the tag holds the new
// VERSION and changelog.
func TestWriteAndTag(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "beta")
	git(t, dir, "config", "user.email", "dev@example.test")
	git(t, dir, "config", "user.name", "Dev")
	git(t, dir, "config", "commit.gpgsign", "false")
	git(t, dir, "config", "tag.gpgsign", "false")
	for i, m := range []string{"feat: first", "fix(api): second", "docs: third"} {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(strings.Repeat("x", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "add", "f")
		git(t, dir, "commit", "-q", "-m", m)
	}
	var out bytes.Buffer
	// The branch names the channel: beta prepares a pre-release.
	if err := run([]string{"-repo", dir, "-write", "-tag"}, &out, time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if v, _ := os.ReadFile(filepath.Join(dir, "VERSION")); string(v) != "0.1.0-beta.1\n" {
		t.Fatalf("VERSION %q\n%s", v, out.String())
	}
	log, _ := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	for _, want := range []string{"# Changelog", "## 0.1.0-beta.1 (2026-11-24, beta)", "### Features\n\n- first", "### Fixes\n\n- **api:** second", "### Documentation"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("CHANGELOG.md lacks %q:\n%s", want, log)
		}
	}
	if !strings.Contains(out.String(), "Debian 0.1.0~beta.1") {
		t.Errorf("output: %s", out.String())
	}
	if tags := git(t, dir, "tag", "--list"); strings.TrimSpace(tags) != "v0.1.0-beta.1" {
		t.Fatalf("tags %q", tags)
	}
	// The tag is on the release commit, which holds the new files.
	if v := git(t, dir, "show", "v0.1.0-beta.1:VERSION"); v != "0.1.0-beta.1\n" {
		t.Fatalf("VERSION in the tagged commit: %q", v)
	}
	if c := git(t, dir, "show", "v0.1.0-beta.1:CHANGELOG.md"); c != string(log) {
		t.Fatalf("CHANGELOG.md in the tagged commit differs from the written one")
	}
	if subj := git(t, dir, "log", "-1", "--format=%s", "v0.1.0-beta.1"); subj != "chore(release): 0.1.0-beta.1\n" {
		t.Fatalf("tagged commit %q", subj)
	}
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("working tree after -write -tag: %q", st)
	}
	// The stable channel still prepares 0.1.0 (a beta is no release).
	out.Reset()
	if err := run([]string{"-repo", dir, "-channel", "community"}, &out, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "next:     0.1.0 ") || !strings.Contains(out.String(), "release:  yes") {
		t.Fatalf("community plan:\n%s", out.String())
	}
	if err := run([]string{"-repo", dir, "-channel", "stable"}, &out, time.Now()); err == nil {
		t.Fatal("unknown channel accepted")
	}
}

// TestTagNeedsTheCommittedVersion: -tag alone refuses a HEAD whose
// committed VERSION is not the prepared version (the old order: tag, then
// commit) and tags once VERSION is written and committed.
func TestTagNeedsTheCommittedVersion(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "community")
	git(t, dir, "config", "user.email", "dev@example.test")
	git(t, dir, "config", "user.name", "Dev")
	git(t, dir, "config", "commit.gpgsign", "false")
	git(t, dir, "config", "tag.gpgsign", "false")
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("0.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "VERSION")
	git(t, dir, "commit", "-q", "-m", "feat: first")
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	if err := run([]string{"-repo", dir, "-tag"}, &out, now); err == nil || !strings.Contains(err.Error(), "commit first") {
		t.Fatalf("-tag with VERSION 0.0.0 committed: %v\n%s", err, out.String())
	}
	if err := run([]string{"-repo", dir, "-write"}, &out, now); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-repo", dir, "-tag"}, &out, now); err == nil {
		t.Fatal("-tag accepted an uncommitted VERSION")
	}
	git(t, dir, "commit", "-q", "-am", "chore(release): 0.1.0")
	if err := run([]string{"-repo", dir, "-tag"}, &out, now); err != nil {
		t.Fatal(err)
	}
	if v := git(t, dir, "show", "v0.1.0:VERSION"); v != "0.1.0\n" {
		t.Fatalf("VERSION in the tagged commit: %q", v)
	}
}
