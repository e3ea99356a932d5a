// Command release prepares LCM's next version from the conventional
// commits since the last release tag (see docs/releasing.md):
//
//	go run ./cmd/release                      # plan for the current branch's channel
//	go run ./cmd/release -channel beta        # plan a pre-release
//	go run ./cmd/release -write -tag          # write VERSION and CHANGELOG.md, commit them, tag vX.Y.Z
//
// It prints the plan; -write updates VERSION and prepends the changelog
// to CHANGELOG.md; with -tag too it commits both ("chore(release): X.Y.Z")
// and then creates the annotated tag on that commit, so the tag holds the
// new VERSION. -tag alone tags HEAD only when its committed VERSION is the
// prepared version. Tags are made only when the prepared version has no tag
// yet, and never on develop. Exit 0 also when there is nothing to release.
//
//	go run ./cmd/release packages             # Debian packages of bin/ into dist/ (make packages)
//	go run ./cmd/release feed -feed F -channel C -version V -dist dist   # add a release to the feed
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lcmproject/lcm/internal/release"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer, now time.Time) error {
	if len(args) > 0 && args[0] == "packages" {
		return runPackages(args[1:], out, now)
	}
	if len(args) > 0 && args[0] == "feed" {
		return runFeed(args[1:], out, now)
	}
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	dir := fs.String("repo", ".", "the repository's working tree")
	channel := fs.String("channel", "", "develop, beta, community or enterprise (default: the current branch when it is one, else community)")
	write := fs.Bool("write", false, "write VERSION and prepend the changelog to CHANGELOG.md")
	tag := fs.Bool("tag", false, "create the annotated tag vX.Y.Z (with -write: after committing VERSION and CHANGELOG.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	repo := release.Repo{Dir: *dir}
	ch := *channel
	if ch == "" {
		if b := repo.Branch(); release.ValidChannel(b) {
			ch = b
		} else {
			ch = release.DefaultChannel
		}
	}
	p, err := release.PlanRepo(repo, ch)
	if err != nil {
		return err
	}
	last := "none"
	if p.Last != nil {
		last = p.Last.String()
	}
	fmt.Fprintf(out, "channel:  %s\nlast:     %s\ncommits:  %d\nstep:     %s\nnext:     %s (Debian %s)\n", p.Channel, last, len(p.Commits), p.Bump, p.Next, p.Next.Debian())
	if !p.Release {
		fmt.Fprintf(out, "release:  no — %s\n", p.Reason)
		return nil
	}
	fmt.Fprintln(out, "release:  yes")
	log := release.Changelog(p, now.UTC().Format("2006-01-02"))
	fmt.Fprintln(out)
	fmt.Fprint(out, log)
	if *write {
		if err := os.WriteFile(filepath.Join(*dir, "VERSION"), []byte(p.Next.String()+"\n"), 0o644); err != nil {
			return err
		}
		path := filepath.Join(*dir, "CHANGELOG.md")
		old, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		head := "# Changelog\n\n"
		body := string(old)
		if len(body) >= len(head) && body[:len(head)] == head {
			body = body[len(head):]
		}
		if err := os.WriteFile(path, []byte(head+log+"\n"+body), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nwrote VERSION (%s) and CHANGELOG.md\n", p.Next)
		if *tag {
			if err := repo.Commit("chore(release): "+p.Next.String(), "VERSION", "CHANGELOG.md"); err != nil {
				return err
			}
			fmt.Fprintf(out, "committed chore(release): %s\n", p.Next)
		}
	}
	if *tag {
		if err := repo.Tag(p.Next, "LCM "+p.Next.String()+" ("+p.Channel+")"); err != nil {
			return err
		}
		fmt.Fprintf(out, "tagged %s\n", p.Next.Tag())
	}
	return nil
}
