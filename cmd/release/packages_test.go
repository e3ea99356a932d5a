package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPackagesSubcommand: `release packages` builds the three packages of
// the given version in Debian form; a bad version is refused.
func TestPackagesSubcommand(t *testing.T) {
	bin, out := t.TempDir(), t.TempDir()
	for _, b := range []string{"lcm-api", "lcm-worker", "lcm-agent-linux-amd64", "lcm-agent-linux-arm64", "lcm-helper-linux-amd64", "lcm-helper-linux-arm64"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := run([]string{"packages", "-repo", filepath.Join("..", ".."), "-bin", bin, "-out", out, "-version", "2.1.0-beta.3"}, &buf, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"lcm", "lcm-worker", "lcm-agent"} {
		f := filepath.Join(out, n+"_2.1.0~beta.3_amd64.deb")
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		if !strings.Contains(buf.String(), n+" 2.1.0~beta.3 "+f+"\n") {
			t.Errorf("output lacks %s:\n%s", n, buf.String())
		}
	}
	if err := run([]string{"packages", "-repo", filepath.Join("..", ".."), "-bin", bin, "-out", out, "-version", "2.1"}, &buf, time.Now()); err == nil {
		t.Error("a bad version was accepted")
	}
}
