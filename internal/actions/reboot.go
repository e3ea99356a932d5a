package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
)

// RebootTiming bounds the wait for a rebooting server.
type RebootTiming struct {
	// Settle is the pause after the reboot is issued before polling: a
	// server still shutting down answers SSH for a few seconds, and a
	// connection then would only see the old boot.
	Settle time.Duration
	// Poll is the pause between reconnection attempts.
	Poll time.Duration
	// Window is how long the server may take to come back: BIOS/UEFI POST
	// of a physical server plus fsck can take several minutes.
	Window time.Duration
}

// DefaultRebootTiming: 15 s settle, 2 s poll, 10 min window.
var DefaultRebootTiming = RebootTiming{Settle: 15 * time.Second, Poll: 2 * time.Second, Window: 10 * time.Minute}

// bootIDCmd prints the kernel's per-boot random id: it changes on every
// boot, so a new value proves the server really rebooted.
const bootIDCmd = "cat /proc/sys/kernel/random/boot_id"

// rebootCmd detaches the reboot into its own session (setsid) so closing
// the SSH session — which kills the command's process group — does not
// cancel it, and delays it 2 s so the issuing session ends cleanly.
const rebootCmd = `setsid sh -c 'sleep 2; systemctl reboot || reboot' </dev/null >/dev/null 2>&1 &`

// Reboot reboots a server and waits until it is back with a new boot id.
// dial opens a fresh connection for each poll (the old one dies with the
// reboot). It returns the time from issuing the reboot until the server
// answered with its new boot id.
func Reboot(ctx context.Context, dial func(context.Context) (remote.Executor, error), out io.Writer, t RebootTiming) (time.Duration, error) {
	before, err := bootID(ctx, dial)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(out, "lcm: boot id before reboot: %s\n", before)
	ex, err := dial(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	code, err := run(ctx, ex, out, remote.Command{Cmd: rebootCmd, Sudo: true})
	ex.Close()
	if err != nil && !errors.Is(err, remote.ErrUnreachable) {
		return 0, err // a dropped connection means the reboot already began
	}
	if err == nil && code != 0 {
		return 0, failf("reboot command exited with code %d (is sudo allowed?)", code)
	}
	fmt.Fprintf(out, "lcm: reboot issued; waiting %s, then polling every %s for up to %s\n", t.Settle, t.Poll, t.Window)
	deadline := start.Add(t.Window)
	if !sleepCtx(ctx, t.Settle) {
		return 0, ctx.Err()
	}
	for attempt := 1; ; attempt++ {
		id, err := bootID(ctx, dial)
		switch {
		case err == nil && id != before:
			d := time.Since(start)
			fmt.Fprintf(out, "lcm: server is back after %s (boot id %s)\n", d.Round(time.Second), id)
			return d, nil
		case err == nil:
			fmt.Fprintf(out, "lcm: attempt %d: still the old boot\n", attempt)
		case ctx.Err() != nil:
			return 0, ctx.Err()
		default:
			fmt.Fprintf(out, "lcm: attempt %d: not back yet\n", attempt)
		}
		if time.Now().Add(t.Poll).After(deadline) {
			return 0, failf("the server did not come back within %s", t.Window)
		}
		if !sleepCtx(ctx, t.Poll) {
			return 0, ctx.Err()
		}
	}
}

func bootID(ctx context.Context, dial func(context.Context) (remote.Executor, error)) (string, error) {
	ex, err := dial(ctx)
	if err != nil {
		return "", err
	}
	defer ex.Close()
	id, code, err := capture(ctx, ex, io.Discard, remote.Command{Cmd: bootIDCmd, Timeout: 30 * time.Second})
	if err != nil {
		return "", err
	}
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		return "", failf("reading the boot id exited with code %d", code)
	}
	return id, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// RebootJob reboots the server, waits for it and then refreshes its
// inventory over a fresh connection, so the facts that a reboot changes
// (kernel, uptime, "reboot required") and the traffic light follow at
// once instead of at the next scheduled refresh. It is not allowed in
// restricted sudo mode.
type RebootJob struct{ Timing RebootTiming }

// Run implements Action (the payload is dropped; runners use RunData).
func (j RebootJob) Run(ctx context.Context, env *Env) (Result, error) {
	r, _, err := j.RunData(ctx, env)
	return r, err
}

// RunData implements DataAction. A refresh that fails after the server
// came back does not fail the reboot: it is reported in the output and
// the next scheduled refresh catches up.
func (j RebootJob) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	t := j.Timing
	if t == (RebootTiming{}) {
		t = DefaultRebootTiming
	}
	dial := func(ctx context.Context) (remote.Executor, error) {
		return env.Dial(ctx, env.Creds.User, env.Creds.PrivateKey)
	}
	d, err := Reboot(ctx, dial, env.Out, t)
	if err != nil {
		return Result{}, nil, err
	}
	secs := int(d.Round(time.Second) / time.Second)
	done := Result{Message: fmt.Sprintf("rebooted; back after %d s", secs), Duration: d}
	fmt.Fprintln(env.Out, "lcm: refreshing the inventory")
	ex, err := dial(ctx)
	if err != nil {
		fmt.Fprintf(env.Out, "lcm: the inventory refresh after the reboot failed (%v); the next scheduled refresh updates it\n", err)
		return done, nil, nil
	}
	defer ex.Close()
	f, inv, err := Refresh(ctx, ex, env.Out)
	if err != nil {
		fmt.Fprintf(env.Out, "lcm: the inventory refresh after the reboot failed (%v); the next scheduled refresh updates it\n", err)
		return done, nil, nil
	}
	r, data, err := refreshResult(env, RefreshData{Facts: f, Inventory: inv}, done.Message)
	if err != nil {
		return done, nil, nil
	}
	r.Duration = d
	return r, data, nil
}
