package actions

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
)

// buildHelperVersion builds cmd/helper as release version v (another
// checksum and version line than the test's own helper).
func buildHelperVersion(t *testing.T, v string) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lcm-helper")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X github.com/lcmproject/lcm/internal/version.semver="+v, "-o", p, "github.com/lcmproject/lcm/cmd/helper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build helper %s: %v\n%s", v, err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHelperUpgradeOnTestHost: a server stays restricted while LCM's
// version changes. The next job that uses the helper finds the installed
// one differs from the worker's, upgrades it through full sudo and back
// (proven as a switch is), and runs on the new one; a current helper is
// left alone; restrict-sudo on a restricted server upgrades it too; a
// helper that cannot hand back full sudo fails the job and changes
// nothing.
func TestHelperUpgradeOnTestHost(t *testing.T) {
	buildHelper(t)
	root, env, _, out := hardeningHost(t)
	ctx := context.Background()
	v1, v2 := buildHelperVersion(t, "1.0.0"), buildHelperVersion(t, "1.1.0")
	worker := v1
	orig := HelperBinary
	HelperBinary = func(goarch string) ([]byte, error) {
		if goarch != runtime.GOARCH {
			return orig(goarch)
		}
		return worker, nil
	}
	t.Cleanup(func() { HelperBinary = orig })

	env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoRestricted})
	r, err := RestrictSudo{}.Run(ctx, env)
	if err != nil || !r.Sudo.Proven || r.Helper == nil || !strings.HasPrefix(r.Helper.Version, "lcm-helper 1.0.0 ") {
		t.Fatalf("restrict with 1.0.0: %v %+v %+v\n%s", err, r.Sudo, r.Helper, out)
	}
	// Current: read back, nothing else.
	out.Reset()
	hs, pr, err := EnsureHelper(ctx, env)
	if err != nil || pr != nil || hs.Upgraded || !strings.HasPrefix(hs.Version, "lcm-helper 1.0.0 ") || hs.SHA256 != r.Helper.SHA256 {
		t.Fatalf("current helper: %v %+v %+v\n%s", err, hs, pr, out)
	}
	// LCM is upgraded: the worker carries 1.1.0.
	worker = v2
	out.Reset()
	hs, pr, err = EnsureHelper(ctx, env)
	if err != nil || !hs.Upgraded || !strings.HasPrefix(hs.Previous, "lcm-helper 1.0.0 ") || !strings.HasPrefix(hs.Version, "lcm-helper 1.1.0 ") ||
		pr == nil || !pr.Proven || pr.Mode != domain.SudoRestricted {
		t.Fatalf("upgrade: %v %+v %+v\n%s", err, hs, pr, out)
	}
	if got := sh(t, root, "stat -c '%U %G %a' "+HelperPath+"; "+HelperPath+" version"); !strings.HasPrefix(got, "root root 755\nlcm-helper 1.1.0 ") {
		t.Fatalf("installed helper: %q", got)
	}
	for cmd, want := range map[string]bool{"sudo -n " + HelperPath + " version": true, "sudo -n /bin/sh -c true": false, "sudo -n true": false} {
		if code, o := as(t, env, cmd+" 2>&1"); (code == 0) != want {
			t.Fatalf("after the upgrade %s: exit %d\n%s", cmd, code, o)
		}
	}
	// A job of the helper's kinds runs on it: the account scan.
	out.Reset()
	env.Params = nil
	if _, _, err := (LinuxUserScanJob{}).RunData(ctx, env); err != nil {
		t.Fatalf("scan after the upgrade: %v\n%s", err, out)
	}
	// restrict-sudo on a restricted server with yet another helper.
	worker = v1
	out.Reset()
	env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoRestricted})
	r, err = RestrictSudo{}.Run(ctx, env)
	if err != nil || !r.Sudo.Proven || !strings.HasPrefix(r.Helper.Version, "lcm-helper 1.0.0 ") || !strings.Contains(out.String(), "hands back full sudo to be upgraded") {
		t.Fatalf("restrict-sudo upgrading: %v %+v\n%s", err, r.Helper, out)
	}
	// A helper that cannot hand back full sudo: the job fails, nothing
	// changes (the server stays restricted on its helper).
	sh(t, root, "cp "+HelperPath+" /root/helper.good && printf '#!/bin/sh\\n[ \"$1\" = version ] && exec /root/helper.good version; exit 1\\n' > "+HelperPath)
	worker = v2
	out.Reset()
	if _, _, err := EnsureHelper(ctx, env); err == nil || !strings.Contains(err.Error(), "could not hand back full sudo") {
		t.Fatalf("broken helper: %v\n%s", err, out)
	}
	sh(t, root, "cp /root/helper.good "+HelperPath)
	if code, _ := as(t, env, "sudo -n /bin/sh -c true"); code == 0 {
		t.Fatal("still restricted after the refused upgrade")
	}
}
