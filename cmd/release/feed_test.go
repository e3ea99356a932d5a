package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/updates"
)

// TestFeed: release feed writes the feed LCM's update check reads, with the
// packages' SHA-256: a first release creates the file, a beta lands on its
// channel, the same version again replaces its entry, and a version
// without packages, an unknown channel or a damaged feed is refused with
// the file unchanged.
func TestFeed(t *testing.T) {
	dist := t.TempDir()
	files := map[string][]byte{
		"lcm_1.3.0_amd64.deb":        []byte("lcm 1.3.0"),
		"lcm-worker_1.3.0_amd64.deb": []byte("worker 1.3.0"),
		"lcm_1.4.0~beta.1_amd64.deb": []byte("lcm beta"),
		"lcm_1.3.0_amd64.deb.sig":    []byte("not a package"),
		"lcm_1.3.01_amd64.deb":       []byte("another version"),
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dist, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(n string) string { h := sha256.Sum256(files[n]); return "sha256:" + hex.EncodeToString(h[:]) }
	feed := filepath.Join(t.TempDir(), "feed.json")
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	for _, args := range [][]string{
		{"feed", "-feed", feed, "-channel", "community", "-version", "1.3.0", "-dist", dist, "-notes-url", "https://example.org/1.3.0"},
		{"feed", "-feed", feed, "-channel", "beta", "-version", "1.4.0-beta.1", "-dist", dist},
		{"feed", "-feed", feed, "-channel", "community", "-version", "1.3.0", "-dist", dist, "-published", "2026-11-25T08:00:00Z"},
	} {
		if err := run(args, &out, now); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	b, err := os.ReadFile(feed)
	if err != nil {
		t.Fatal(err)
	}
	f, err := updates.ParseFeed(b)
	if err != nil {
		t.Fatalf("the written feed: %v\n%s", err, b)
	}
	c := f.Channels["community"]
	if len(c) != 1 || c[0].Version != "1.3.0" || !c[0].PublishedAt.Equal(time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)) || c[0].NotesURL != "" ||
		len(c[0].Checksums) != 2 || c[0].Checksums["lcm_1.3.0_amd64.deb"] != sum("lcm_1.3.0_amd64.deb") ||
		c[0].Checksums["lcm-worker_1.3.0_amd64.deb"] != sum("lcm-worker_1.3.0_amd64.deb") {
		t.Fatalf("community: %+v", c)
	}
	be := f.Latest("beta")
	if be == nil || be.Version != "1.4.0-beta.1" || !be.PublishedAt.Equal(now) || be.Checksums["lcm_1.4.0~beta.1_amd64.deb"] != sum("lcm_1.4.0~beta.1_amd64.deb") {
		t.Fatalf("beta: %+v", be)
	}
	for name, args := range map[string][]string{
		"no packages":     {"feed", "-feed", feed, "-channel", "community", "-version", "1.5.0", "-dist", dist},
		"unknown channel": {"feed", "-feed", feed, "-channel", "nightly", "-version", "1.3.0", "-dist", dist},
		"bad version":     {"feed", "-feed", feed, "-channel", "community", "-version", "1.3", "-dist", dist},
		"no feed":         {"feed", "-channel", "community", "-version", "1.3.0", "-dist", dist},
	} {
		if err := run(args, &out, now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if after, _ := os.ReadFile(feed); !bytes.Equal(after, b) {
		t.Fatal("a refused call changed the feed")
	}
	damaged := filepath.Join(t.TempDir(), "feed.json")
	if err := os.WriteFile(damaged, []byte(`{"schema": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"feed", "-feed", damaged, "-version", "1.3.0", "-dist", dist}, &out, now); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("a damaged feed: %v", err)
	}
}
