package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/release"
	"github.com/lcmproject/lcm/internal/updates"
)

// runFeed: release feed -feed dist/feed.json -channel community
// [-version X.Y.Z] [-dist dist] [-notes-url URL] [-published RFC3339] adds
// a release to the release feed (docs/updates.md), creating the file when
// there is none: the version (default the VERSION file) on the channel,
// with the SHA-256 of every Debian package of that version in -dist
// (<name>_<Debian version>_<arch>.deb, as make packages names them). A
// release already in the channel is replaced. The result is checked as
// LCM's update check reads it and written atomically.
func runFeed(args []string, out io.Writer, now time.Time) error {
	fset := flag.NewFlagSet("release feed", flag.ContinueOnError)
	repo := fset.String("repo", ".", "the repository's working tree (for VERSION)")
	feedPath := fset.String("feed", "", "the feed file to update (created when missing)")
	channel := fset.String("channel", release.DefaultChannel, "develop, beta, community or enterprise")
	version := fset.String("version", "", "X.Y.Z or X.Y.Z-beta.N (default: the VERSION file)")
	dist := fset.String("dist", "", "the directory of the .deb files (default <repo>/dist)")
	notes := fset.String("notes-url", "", "the release notes (http or https URL)")
	published := fset.String("published", "", "publication time, RFC 3339 (default now)")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *feedPath == "" {
		return errors.New("release feed: -feed is required")
	}
	v := *version
	if v == "" {
		b, err := os.ReadFile(filepath.Join(*repo, "VERSION"))
		if err != nil {
			return err
		}
		v = strings.TrimSpace(string(b))
	}
	ver, err := release.ParseVersion(v)
	if err != nil {
		return err
	}
	at := now.UTC().Truncate(time.Second)
	if *published != "" {
		if at, err = time.Parse(time.RFC3339, *published); err != nil {
			return fmt.Errorf("release feed: -published: %w", err)
		}
	}
	if *dist == "" {
		*dist = filepath.Join(*repo, "dist")
	}
	sums, err := packageChecksums(*dist, ver.Debian())
	if err != nil {
		return err
	}
	feed := updates.NewFeed()
	if b, err := os.ReadFile(*feedPath); err == nil {
		if feed, err = updates.ParseFeed(b); err != nil {
			return fmt.Errorf("release feed: %s: %w", *feedPath, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := feed.Add(*channel, updates.Release{Version: ver.String(), PublishedAt: at, NotesURL: *notes, Checksums: sums}); err != nil {
		return err
	}
	b, err := feed.Encode()
	if err != nil {
		return err
	}
	tmp := *feedPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, *feedPath); err != nil {
		return err
	}
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "%s: %s on %s with %d packages (%s)\n", *feedPath, ver, *channel, len(sums), strings.Join(names, ", "))
	return nil
}

// packageChecksums hashes the .deb files of one Debian version in dir:
// "<name>_<debVersion>_<arch>.deb" → "sha256:<hex>". None is an error: a
// release the feed announces must have its packages.
func packageChecksums(dir, debVersion string) (map[string]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("release feed: -dist: %w", err)
	}
	sums := map[string]string{}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".deb") || !strings.Contains(n, "_"+debVersion+"_") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		sums[n] = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	if len(sums) == 0 {
		return nil, fmt.Errorf("release feed: no packages of version %s in %s (make packages first)", debVersion, dir)
	}
	return sums, nil
}
