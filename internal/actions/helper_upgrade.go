package actions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/remote"
)

// HelperState is lcm-helper as a job read it back on the server (the job's
// result.helper; the server record keeps it).
type HelperState struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	// Upgraded: the job installed the worker's helper first.
	Upgraded bool `json:"upgraded,omitempty"`
	// Previous is the version line before an upgrade.
	Previous string    `json:"previous,omitempty"`
	At       time.Time `json:"at"`
}

// helperProbe prints the machine, the installed helper's checksum and its
// version line (none of it needs root but the version, which goes through
// sudo as every use of the helper does).
const helperProbe = `uname -m; sha256sum ` + HelperPath + ` 2>/dev/null | cut -d' ' -f1; echo; sudo -n ` + HelperPath + ` version 2>/dev/null; true`

// EnsureHelper runs at the start of a job that uses lcm-helper on a server
// whose stored sudo mode is restricted: it reads the installed helper back
// and, when its checksum differs from the worker's helper for that
// machine (another LCM version), upgrades it the proven way — the old
// helper hands back full sudo, the new one is installed (checksum, owner
// and mode read back), restricted mode is written again and proven over a
// fresh connection. The helper state is returned for the server record;
// sudo is the proof of the round trip (nil without an upgrade). A failed
// upgrade fails the job: full mode is restored in the same run (sudo says
// so), and the job does not run on a helper it could not prove.
func EnsureHelper(ctx context.Context, env *Env) (*HelperState, *SudoProof, error) {
	out := env.Out
	hs, want, err := readHelper(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	if want == "" || want == hs.SHA256 {
		if want != "" {
			fmt.Fprintf(out, "lcm: %s is current (%s)\n", HelperPath, orDash(hs.Version))
		}
		return hs, nil, nil
	}
	version, installed := hs.Version, hs.SHA256
	fmt.Fprintf(out, "lcm: %s (%s, sha256 %s) differs from this worker's (sha256 %s): upgrading it through full sudo and back\n",
		HelperPath, orDash(version), shortSum(installed), shortSum(want))
	code, err := run(ctx, env.Exec, out, remote.Command{Cmd: "sudo -n " + HelperPath + " sudo-mode full"})
	if err != nil {
		return hs, nil, err
	}
	if code != 0 {
		return hs, nil, failf("the helper on the server is outdated and could not hand back full sudo to be upgraded (exit code %d): switch the server to full sudo mode and back", code)
	}
	res, err := RestrictSudo{}.toRestricted(ctx, env, domain.SudoFull)
	pr := res.Sudo
	if pr == nil {
		// Nothing was switched back yet (the install failed): the server
		// is in full mode now; prove and say so.
		pr = &SudoProof{}
		if perr := proveFull(ctx, env, pr); perr != nil {
			return hs, pr, failf("upgrading the helper failed (%v), and full mode could not be proven (%v): check /etc/sudoers.d/lcm on the server", err, perr)
		}
	}
	if err != nil {
		return hs, pr, failf("upgrading the helper failed: %v; the server is in %s sudo mode now: switch it to restricted again", err, orDash(pr.Mode))
	}
	hs.Previous, hs.Version, hs.SHA256, hs.Upgraded = version, pr.HelperVersion, pr.HelperSHA256, true
	fmt.Fprintf(out, "lcm: helper upgraded to %s; restricted mode proven again\n", hs.Version)
	return hs, pr, nil
}

// readHelper reads the installed helper back and returns the checksum of
// the worker's helper for the server's machine ("" when the worker has
// none: the installed one is used as it is).
func readHelper(ctx context.Context, env *Env) (*HelperState, string, error) {
	raw, _, err := capture(ctx, env.Exec, io.Discard, remote.Command{Cmd: helperProbe})
	if err != nil {
		return nil, "", err
	}
	lines := strings.Split(raw, "\n")
	for len(lines) < 3 {
		lines = append(lines, "")
	}
	machine, installed, version := strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1]), strings.TrimSpace(strings.Join(lines[2:], " "))
	hs := &HelperState{Version: version, SHA256: installed, At: time.Now().UTC()}
	goarch, ok := map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[machine]
	if !ok {
		fmt.Fprintf(env.Out, "lcm: no lcm-helper build for machine %q; the installed helper is used as it is\n", machine)
		return hs, "", nil
	}
	bin, err := HelperBinary(goarch)
	if err != nil {
		fmt.Fprintf(env.Out, "lcm: %v; the installed helper is used as it is\n", err)
		return hs, "", nil
	}
	sum := sha256.Sum256(bin)
	return hs, hex.EncodeToString(sum[:]), nil
}

func shortSum(sum string) string {
	if len(sum) > 16 {
		return sum[:16]
	}
	return orDash(sum)
}
