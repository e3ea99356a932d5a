package agentdist

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFindChecksumAndCache(t *testing.T) {
	dir := t.TempDir()
	d := New(dir)
	if _, err := d.Find("amd64"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("missing binary: %v", err)
	}
	for _, bad := range []string{"", "386", "../amd64", "amd64/", "AMD64"} {
		if _, err := d.Find(bad); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("arch %q: %v, want invalid", bad, err)
		}
	}
	p := filepath.Join(dir, FileName("amd64"))
	write := func(data string, mtime time.Time) string {
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256([]byte(data))
		return hex.EncodeToString(s[:])
	}
	want := write("binary one", time.Unix(1_700_000_000, 0))
	b, err := d.Find("amd64")
	if err != nil || b.SHA256 != want || b.Size != 10 || b.Path != p {
		t.Fatalf("Find: %+v %v", b, err)
	}
	// A rebuilt binary (other size or mtime) gets a new checksum.
	want = write("binary number two", time.Unix(1_700_000_100, 0))
	if b, _ = d.Find("amd64"); b.SHA256 != want {
		t.Fatalf("after rebuild: %s, want %s", b.SHA256, want)
	}
}

// TestInstallCommandShape checks the steps of the install command and
// that it parses as shell (the real run is the e2e test on a test host).
func TestInstallCommandShape(t *testing.T) {
	tok := "lcmenroll_eyJhIjoiYiJ9"
	cmd := InstallCommand("https://lcm.example:9300/", Binary{Arch: "arm64", SHA256: strings.Repeat("0", 64)}, tok)
	for _, part := range []string{"( set -e; ", "'https://lcm.example:9300/api/v1/agent/download/arm64'",
		"echo '" + strings.Repeat("0", 64) + "  /tmp/lcm-agent' | sha256sum -c -",
		"lcm-agent enroll -force '" + tok + "'", "lcm-agent install-service )"} {
		if !strings.Contains(cmd, part) {
			t.Errorf("install command lacks %q:\n%s", part, cmd)
		}
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	// The command parses as shell.
	if out, err := exec.Command("sh", "-n", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("sh -n: %v %s", err, out)
	}
}
