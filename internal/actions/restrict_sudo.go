package actions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/helper"
	"github.com/lcmproject/lcm/internal/remote"
)

// RestrictSudoParams are restrict-sudo's parameters.
type RestrictSudoParams struct {
	Mode string `json:"mode"` // domain.SudoFull or domain.SudoRestricted
}

// SudoProof is what a sudo mode switch proved (the job's result.sudo).
type SudoProof struct {
	// Proven: Mode was proven over a fresh connection (after a rollback:
	// the mode the server is back in).
	Proven bool   `json:"proven"`
	Mode   string `json:"mode,omitempty"`
	// Allowed are the absolute paths of the restricted rule.
	Allowed       []string `json:"allowed,omitempty"`
	HelperVersion string   `json:"helper_version,omitempty"`
	HelperSHA256  string   `json:"helper_sha256,omitempty"`
	// Checks are the proof's sudo calls and their outcome.
	Checks     []string `json:"checks,omitempty"`
	RolledBack bool     `json:"rolled_back,omitempty"`
}

// RestrictSudo switches the management user's sudo between full
// (NOPASSWD: ALL) and restricted (an allowlist written by lcm-helper).
//
//	restricted: install lcm-helper (root-owned 0755, checksum read back, version run) ──►
//	  helper sudo-mode restricted (watchdog armed, visudo -cf, atomic move) ──►
//	  fresh login: sudo -n helper version ✓, sudo -n <package manager> --version ✓, sudo -n /bin/sh -c true ✗ ──►
//	  helper sudo-mode confirm (watchdog stands down)
//	  proof fails ──► helper sudo-mode full; unreachable helper ──► the watchdog restores full mode
//	full: helper sudo-mode full ──► fresh login: sudo -n true ✓
type RestrictSudo struct {
	// beforeProof, in tests, breaks something between switch and proof.
	beforeProof func()
	// watchdogWait bounds the wait for the watchdog (default: its grace
	// period plus 20 s).
	watchdogWait time.Duration
}

// HelperBinary returns the lcm-helper binary for a server architecture
// (GOARCH): $LCM_HELPER_BIN for the worker's own architecture, else
// lcm-helper-linux-<arch> or (same architecture) lcm-helper next to the
// worker's executable, else lcm-helper-linux-<arch> in the lcm-worker
// package's directory. make build puts bin/lcm-helper and
// bin/lcm-helper-linux-{amd64,arm64} beside the others; the lcm package
// ships them in /usr/lib/lcm, the lcm-worker package in
// /usr/lib/lcm-worker (docs/packages-deb.md).
var HelperBinary = func(goarch string) ([]byte, error) {
	var cands []string
	if p := os.Getenv("LCM_HELPER_BIN"); p != "" && goarch == runtime.GOARCH {
		cands = append(cands, p)
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		cands = append(cands, filepath.Join(dir, "lcm-helper-linux-"+goarch))
		if goarch == runtime.GOARCH {
			cands = append(cands, filepath.Join(dir, "lcm-helper"))
		}
	}
	cands = append(cands, filepath.Join(WorkerHelperDir, "lcm-helper-linux-"+goarch))
	for _, c := range cands {
		if b, err := os.ReadFile(c); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("no lcm-helper for linux/%s next to the worker (looked at %s)", goarch, strings.Join(cands, ", "))
}

// WorkerHelperDir is where the lcm-worker package puts the helpers.
const WorkerHelperDir = "/usr/lib/lcm-worker"

// Run implements Action.
func (r RestrictSudo) Run(ctx context.Context, env *Env) (Result, error) {
	var p RestrictSudoParams
	if err := json.Unmarshal(env.Params, &p); err != nil || (p.Mode != domain.SudoFull && p.Mode != domain.SudoRestricted) {
		return Result{}, failf("bad parameters: mode must be full or restricted")
	}
	out := env.Out
	cur, err := currentSudoMode(ctx, env.Exec, out)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(out, "lcm: sudo mode now: %s; wanted: %s\n", cur, p.Mode)
	if p.Mode == domain.SudoFull {
		return r.toFull(ctx, env, cur)
	}
	return r.toRestricted(ctx, env, cur)
}

// currentSudoMode is "full" when sudo -n true works, "restricted" when only
// the helper does.
func currentSudoMode(ctx context.Context, ex remote.Executor, out io.Writer) (string, error) {
	code, err := run(ctx, ex, io.Discard, remote.Command{Cmd: "sudo -n true"})
	if err != nil {
		return "", err
	}
	if code == 0 {
		return domain.SudoFull, nil
	}
	code, err = run(ctx, ex, out, remote.Command{Cmd: "sudo -n " + HelperPath + " version"})
	if err != nil {
		return "", err
	}
	if code == 0 {
		return domain.SudoRestricted, nil
	}
	return "", failf("the management user reaches neither full sudo nor the helper (exit code %d): repair sudo on the server", code)
}

func (r RestrictSudo) toFull(ctx context.Context, env *Env, cur string) (Result, error) {
	pr := &SudoProof{Mode: domain.SudoFull}
	if cur == domain.SudoRestricted {
		code, err := run(ctx, env.Exec, env.Out, remote.Command{Cmd: "sudo -n " + HelperPath + " sudo-mode full"})
		if err != nil {
			return Result{}, err
		}
		if code != 0 {
			return Result{Sudo: pr}, failf("the helper could not restore full mode (exit code %d); the server stays restricted", code)
		}
	}
	if err := proveFull(ctx, env, pr); err != nil {
		return Result{Sudo: pr}, failf("full mode not proven: %v", err)
	}
	return Result{Message: "sudo mode full (proven: sudo -n true works over a fresh connection)", Sudo: pr}, nil
}

func (r RestrictSudo) toRestricted(ctx context.Context, env *Env, cur string) (Result, error) {
	out := env.Out
	pr := &SudoProof{}
	if cur == domain.SudoRestricted {
		// Already restricted: the helper writes the allowlist again; an
		// outdated helper first hands back full sudo to be upgraded.
		hs, want, err := readHelper(ctx, env)
		if err != nil {
			return Result{}, err
		}
		pr.HelperVersion, pr.HelperSHA256 = hs.Version, hs.SHA256
		if want != "" && want != hs.SHA256 {
			fmt.Fprintf(out, "lcm: the installed helper (%s) differs from this worker's: it hands back full sudo to be upgraded\n", orDash(hs.Version))
			code, err := run(ctx, env.Exec, out, remote.Command{Cmd: "sudo -n " + HelperPath + " sudo-mode full"})
			if err != nil {
				return Result{}, err
			}
			if code != 0 {
				return Result{}, failf("the outdated helper could not hand back full sudo (exit code %d): nothing changed", code)
			}
			cur = domain.SudoFull
		} else {
			fmt.Fprintln(out, "lcm: already restricted: the helper (current) writes the allowlist again")
		}
	}
	if cur == domain.SudoFull {
		if err := installHelper(ctx, env, pr); err != nil {
			return Result{}, err
		}
	}
	raw, code, err := capture(ctx, env.Exec, out, remote.Command{Cmd: "sudo -n " + HelperPath + " sudo-mode restricted"})
	fmt.Fprint(out, raw)
	if err != nil {
		return Result{}, err
	}
	if code != 0 {
		// visudo refused or the helper failed: it left the full rule.
		pr.Mode = cur
		return Result{Sudo: pr}, failf("the helper could not write the restricted rule (exit code %d, see the output); nothing changed", code)
	}
	pr.Allowed = parseAllowed(raw)
	if r.beforeProof != nil {
		r.beforeProof()
	}
	if err := proveRestricted(ctx, env, pr); err != nil {
		return r.restoreFull(ctx, env, pr, "restricted mode not proven: "+err.Error())
	}
	code, err = run(ctx, env.Exec, out, remote.Command{Cmd: "sudo -n " + HelperPath + " sudo-mode confirm"})
	if err != nil || code != 0 {
		return r.restoreFull(ctx, env, pr, fmt.Sprintf("the helper could not confirm restricted mode (exit code %d, %v)", code, err))
	}
	pr.Proven, pr.Mode = true, domain.SudoRestricted
	return Result{Message: "sudo mode restricted (proven: the helper and the package manager work through sudo -n, a shell is refused)", Sudo: pr,
		Helper: &HelperState{Version: pr.HelperVersion, SHA256: pr.HelperSHA256, At: time.Now().UTC()}}, nil
}

// restoreFull puts full mode back in the same run: through the helper,
// else by waiting for the helper's watchdog.
func (r RestrictSudo) restoreFull(ctx context.Context, env *Env, pr *SudoProof, reason string) (Result, error) {
	out := env.Out
	fmt.Fprintf(out, "lcm: %s; restoring full mode\n", reason)
	pr.RolledBack, pr.Proven, pr.Mode = true, false, ""
	code, err := run(ctx, env.Exec, out, remote.Command{Cmd: "sudo -n " + HelperPath + " sudo-mode full"})
	if err == nil && code == 0 && proveFull(ctx, env, pr) == nil {
		return Result{Sudo: pr}, failf("%s; full mode restored", reason)
	}
	wait := r.watchdogWait
	if wait == 0 {
		wait = helper.RestrictGrace + 20*time.Second
	}
	fmt.Fprintf(out, "lcm: the helper cannot restore full mode; waiting up to %s for its watchdog\n", wait)
	deadline := time.Now().Add(wait)
	var last error
	tries := 0
	for time.Now().Before(deadline) {
		if !sleepCtx(ctx, 2*time.Second) {
			return Result{Sudo: pr}, ctx.Err()
		}
		tries++
		if last = proveFull(ctx, env, pr); last == nil {
			return Result{Sudo: pr}, failf("%s; the helper could not be reached, and its watchdog restored full mode", reason)
		}
	}
	return Result{Sudo: pr}, failf("%s; full mode could NOT be restored (neither the helper nor its watchdog; %d checks, the last: %v): fix /etc/sudoers.d/lcm on the server as root", reason, tries, last)
}

// installHelper uploads lcm-helper (full sudo needed), checks its
// checksum on the server and runs it.
func installHelper(ctx context.Context, env *Env, pr *SudoProof) error {
	out := env.Out
	arch, _, err := capture(ctx, env.Exec, out, remote.Command{Cmd: "uname -m"})
	if err != nil {
		return err
	}
	goarch, ok := map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[strings.TrimSpace(arch)]
	if !ok {
		return failf("no lcm-helper build for machine %q", strings.TrimSpace(arch))
	}
	bin, err := HelperBinary(goarch)
	if err != nil {
		return failf("%v", err)
	}
	sum := sha256.Sum256(bin)
	want := hex.EncodeToString(sum[:])
	pr.HelperSHA256 = want
	installed, _, err := capture(ctx, env.Exec, io.Discard, remote.Command{Cmd: "sha256sum " + HelperPath + " 2>/dev/null | cut -d' ' -f1"})
	if err != nil {
		return err
	}
	if strings.TrimSpace(installed) == want {
		fmt.Fprintf(out, "lcm: %s is current (sha256 %s)\n", HelperPath, want[:16])
	} else {
		fmt.Fprintf(out, "lcm: installing %s (%d bytes, sha256 %s)\n", HelperPath, len(bin), want[:16])
		script := `set -e; D=$(dirname "$1"); mkdir -p "$D"; T=$(mktemp "$D/.lcm-helper.XXXXXX"); cat > "$T"
if [ "$(sha256sum "$T" | cut -d' ' -f1)" != "$2" ]; then rm -f "$T"; echo "lcm: upload corrupted" >&2; exit 3; fi
chown root:root "$T"; chmod 0755 "$T"; mv -f "$T" "$1"`
		code, err := run(ctx, env.Exec, out, remote.Command{Cmd: "sh -c " + shQuote(script) + " lcm " + HelperPath + " " + want,
			Stdin: bytes.NewReader(bin), Sudo: true, Timeout: 5 * time.Minute})
		if err != nil {
			return err
		}
		if code != 0 {
			return failf("installing the helper failed with exit code %d; nothing changed", code)
		}
	}
	// Read back: owner, mode and checksum of the installed file, then run it.
	st, code, err := capture(ctx, env.Exec, out, remote.Command{Cmd: "stat -c '%U %G %a' " + HelperPath + " && sha256sum " + HelperPath + " | cut -d' ' -f1"})
	if err != nil {
		return err
	}
	if f := strings.Fields(st); code != 0 || len(f) != 4 || f[0] != "root" || f[1] != "root" || f[2] != "755" || f[3] != want {
		return failf("the installed helper does not read back as root:root 0755 with sha256 %s (got %q); nothing changed", want[:16], strings.TrimSpace(st))
	}
	v, code, err := capture(ctx, env.Exec, out, remote.Command{Cmd: "sudo -n " + HelperPath + " version"})
	if err != nil {
		return err
	}
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(v), " protocol "+helper.Protocol) {
		return failf("the helper does not run (exit code %d, %q); nothing changed", code, strings.TrimSpace(v))
	}
	pr.HelperVersion = strings.TrimSpace(v)
	fmt.Fprintf(out, "lcm: helper installed and proven: %s\n", pr.HelperVersion)
	return nil
}

// parseAllowed reads the helper's "allowed: a b c" line.
func parseAllowed(out string) []string {
	for _, l := range strings.Split(out, "\n") {
		if _, rest, ok := strings.Cut(l, "; allowed: "); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}

// packageManagers are the allowlist entries the proof runs with --version.
var packageManagers = []string{"apt-get", "dnf", "yum", "zypper", "pacman", "apk"}

// proveRestricted proves the restricted rule over a fresh connection.
func proveRestricted(ctx context.Context, env *Env, pr *SudoProof) error {
	pm := ""
	for _, a := range pr.Allowed {
		if pm == "" && containsStr(packageManagers, filepath.Base(a)) {
			pm = a
		}
	}
	if pm == "" {
		return errors.New("the allowlist holds no package manager")
	}
	ex, err := freshLogin(ctx, env)
	if err != nil {
		return err
	}
	defer ex.Close()
	checks := []struct {
		cmd  string
		want bool // must succeed
	}{
		{"sudo -n " + HelperPath + " version", true},
		{"sudo -n " + pm + " --version", true},
		{"sudo -n /bin/sh -c true", false},
	}
	for _, c := range checks {
		code, err := run(ctx, ex, io.Discard, remote.Command{Cmd: c.cmd + " >/dev/null 2>&1"})
		if err != nil {
			return err
		}
		ok := (code == 0) == c.want
		verdict := "works"
		if code != 0 {
			verdict = "refused"
		}
		pr.Checks = append(pr.Checks, c.cmd+": "+verdict)
		fmt.Fprintf(env.Out, "lcm: proof: %s: %s\n", c.cmd, verdict)
		if !ok {
			return fmt.Errorf("%s: %s over a fresh connection", c.cmd, verdict)
		}
	}
	return nil
}

// proveFull proves full sudo over a fresh connection.
func proveFull(ctx context.Context, env *Env, pr *SudoProof) error {
	ex, err := freshLogin(ctx, env)
	if err != nil {
		return err
	}
	defer ex.Close()
	code, err := run(ctx, ex, io.Discard, remote.Command{Cmd: "sudo -n true"})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("sudo -n true exited with code %d", code)
	}
	pr.Checks = append(pr.Checks, "sudo -n true: works")
	pr.Proven, pr.Mode = true, domain.SudoFull
	fmt.Fprintln(env.Out, "lcm: proof: sudo -n true works over a fresh connection (full mode)")
	return nil
}

func freshLogin(ctx context.Context, env *Env) (remote.Executor, error) {
	ex, err := env.Dial(ctx, env.Creds.User, env.Creds.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("a fresh login as %s failed: %w", env.Creds.User, err)
	}
	return ex, nil
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
