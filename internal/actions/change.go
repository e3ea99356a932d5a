package actions

import (
	"context"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote/sections"
)

// A package change and the inventory refresh that ends it run as ONE
// sectioned script (internal/remote/sections): the package-list age and
// refresh, the change, the facts collector and the package listings. On
// SSH that is one channel instead of up to eight; the console shows the
// same lines as when each ran on its own.

// changeTimeout bounds the whole sectioned session: each part's own bound
// (list refresh, upgrade, facts, three listings) added up.
const changeTimeout = listsTimeout + upgradeTimeout + shortTimeout + 3*listTimeout

// sectionTail is how much of the list refresh's output is kept for the
// package manager's error message.
const sectionTail = 16 << 10

// change is one package change.
type change struct {
	// refresh brings the package lists up to date first (and reports
	// their age); a failed refresh skips the change.
	refresh bool
	// ageOnly reports the lists' age without refreshing (pacman's -Syu
	// refreshes inside the upgrade).
	ageOnly bool
	// cmd is the change; "" runs none (refresh-lists alone, or an action
	// the family cannot do).
	cmd string
	// failed names a change that exited with code.
	failed func(code int) error
}

// runChange runs ch and the inventory refresh after it in one session and
// returns what refreshAfter returns: the job's result, the refresh payload
// and the job's error. actErr is an error decided before anything ran (an
// action the family cannot do): the inventory is still read, and the
// error is the job's. With soft, an inventory that cannot be read after a
// successful change does not fail the job (the output says so).
func runChange(ctx context.Context, env *Env, m pkgmgr.Manager, ch change, actErr error, msg string, soft bool) (Result, []byte, error) {
	out := env.Out
	var secs []sections.Section
	if ch.refresh || ch.ageOnly {
		secs = append(secs, sections.Section{Name: "lists-age", Cmd: m.ListsAge(),
			End: func(r sections.Result) {
				a, err := pkgmgr.ParseListsAge(r.Stdout)
				if r.Code != 0 {
					err = fmt.Errorf("exit code %d", r.Code)
				}
				fmt.Fprintln(out, "lcm: "+describeListsAge(a, err))
				if ch.ageOnly {
					fmt.Fprintln(out, PacmanSyu)
				}
			}})
	}
	if ch.refresh {
		secs = append(secs, sections.Section{Name: "refresh-lists", Flags: sections.Merge + sections.Gate, Cmd: m.RefreshLists(),
			Live: true, Keep: sectionTail,
			Begin: func() { fmt.Fprintf(out, "lcm: refreshing %s\n", refreshWhat(m)) },
			End: func(r sections.Result) {
				if r.Code == 0 {
					fmt.Fprintf(out, "lcm: package lists refreshed in %s\n", r.Took.Round(100*time.Millisecond))
				}
			}})
	}
	if ch.cmd != "" {
		secs = append(secs, sections.Section{Name: "change", Flags: sections.Depends, Cmd: ch.cmd, Live: true})
	}
	secs = append(secs,
		sections.Section{Name: "facts", Cmd: facts.Script(), Begin: func() { fmt.Fprintln(out, "lcm: refreshing the inventory") }},
		sections.Section{Name: "installed", Cmd: m.ListInstalled()},
		sections.Section{Name: "upgradable", Cmd: m.ListUpgradable()})
	if h, ok := m.(pkgmgr.HoldLister); ok {
		secs = append(secs, sections.Section{Name: "held", Cmd: h.ListHeld()})
	}
	res, runErr := sections.Run(ctx, env.Exec, out, secs, changeTimeout, upgradeIdle)

	r := Result{}
	if rl := res["refresh-lists"]; ch.refresh {
		switch {
		case !rl.Done:
			return r, nil, transportErr(runErr)
		case rl.Code != 0:
			r.ExitCode = rl.Code
			actErr = failf("package lists could not be refreshed (%s exited with code %d): %s",
				m.Name(), rl.Code, managerMessage(string(rl.Stdout), ""))
		}
	}
	if c := res["change"]; ch.cmd != "" && actErr == nil {
		if !c.Done {
			return r, nil, transportErr(runErr)
		}
		if c.Code != 0 {
			r.ExitCode = c.Code
			actErr = ch.failed(c.Code)
		}
	}
	if actErr != nil && ctx.Err() != nil {
		return r, nil, actErr
	}
	f, inv, invErr := changeInventory(ctx, env, m, res, runErr)
	if invErr != nil {
		if actErr != nil {
			return r, nil, actErr
		}
		if soft && ctx.Err() == nil {
			fmt.Fprintf(out, "lcm: inventory refresh failed: %v; the inventory updates with the next refresh\n", invErr)
			r.Message = msg
			return r, nil, nil
		}
		return r, nil, invErr
	}
	res2, data, err := refreshResult(env, RefreshData{Facts: f, Inventory: inv}, msg)
	if err != nil {
		return r, nil, err
	}
	res2.ExitCode = r.ExitCode
	return res2, data, actErr
}

// changeInventory reads the facts and the package inventory from the
// sections. When the facts name another package manager than the one the
// job used (the server's recorded family was wrong), the listings are run
// again with the right one.
func changeInventory(ctx context.Context, env *Env, m pkgmgr.Manager, res map[string]*sections.Result, runErr error) (facts.Facts, pkgmgr.Inventory, error) {
	fr := res["facts"]
	if !fr.Done {
		return facts.Facts{}, pkgmgr.Inventory{}, transportErr(runErr)
	}
	f, err := parseFacts(string(fr.Stdout), fr.Code, env.Out)
	if err != nil {
		return f, pkgmgr.Inventory{}, err
	}
	fam, err := pkgmgr.FamilyFromOSRelease(f.OS.ID, f.OS.IDLike)
	if err != nil {
		fmt.Fprintf(env.Out, "lcm: %v; package inventory skipped\n", err)
		return f, pkgmgr.Inventory{}, nil
	}
	real, err := managerFor(fam, f.PackageManager)
	if err != nil {
		return f, pkgmgr.Inventory{}, failf("%v", err)
	}
	if real.Name() != m.Name() {
		inv, err := listPackages(ctx, env.Exec, env.Out, real)
		return f, inv, err
	}
	var raw inventoryRaw
	for _, x := range []struct {
		name string
		text *string
		code *int
	}{{"installed", &raw.installed, &raw.installedCode}, {"upgradable", &raw.upgradable, &raw.upgradableCode}, {"held", &raw.held, &raw.heldCode}} {
		s := res[x.name]
		if s == nil {
			continue
		}
		if !s.Done {
			if x.name == "held" {
				continue // costs only the held entries (heldErr)
			}
			return f, pkgmgr.Inventory{}, transportErr(runErr)
		}
		*x.text, *x.code = string(s.Stdout), s.Code
	}
	if s := res["held"]; s != nil && !s.Done {
		raw.heldErr = transportErr(runErr)
	}
	inv, err := parseInventory(m, raw, env.Out)
	return f, inv, err
}

// transportErr is the error of a session that ended before a section did:
// the transport's, or a plain one when the script itself stopped.
func transportErr(err error) error {
	if err != nil {
		return err
	}
	return failf("the command session ended before it finished (the server closed it)")
}

// refreshInOneSession is the refresh job as one sectioned session: the
// facts, the package lists' age and refresh, the package listings and the
// container listing. A failed list refresh fails the job (its message is
// the package manager's) and skips the listings, as separate commands
// did. When the facts name another package manager than the recorded
// family's, the refresh runs again the long way (RefreshWithLists).
func refreshInOneSession(ctx context.Context, env *Env, m pkgmgr.Manager) (Result, []byte, error) {
	out := env.Out
	var factsErr error
	var f facts.Facts
	secs := []sections.Section{
		{Name: "facts", Cmd: facts.Script(), End: func(r sections.Result) { f, factsErr = parseFacts(string(r.Stdout), r.Code, out) }},
		{Name: "lists-age", Cmd: m.ListsAge(), End: func(r sections.Result) {
			a, err := pkgmgr.ParseListsAge(r.Stdout)
			if r.Code != 0 {
				err = fmt.Errorf("exit code %d", r.Code)
			}
			fmt.Fprintln(out, "lcm: "+describeListsAge(a, err))
		}},
		{Name: "refresh-lists", Flags: sections.Merge + sections.Gate, Cmd: m.RefreshLists(), Live: true, Keep: sectionTail,
			Begin: func() { fmt.Fprintf(out, "lcm: refreshing %s\n", refreshWhat(m)) },
			End: func(r sections.Result) {
				if r.Code == 0 {
					fmt.Fprintf(out, "lcm: package lists refreshed in %s\n", r.Took.Round(100*time.Millisecond))
				}
			}},
		{Name: "installed", Flags: sections.Depends, Cmd: m.ListInstalled()},
		{Name: "upgradable", Flags: sections.Depends, Cmd: m.ListUpgradable()},
	}
	if h, ok := m.(pkgmgr.HoldLister); ok {
		secs = append(secs, sections.Section{Name: "held", Flags: sections.Depends, Cmd: h.ListHeld()})
	}
	secs = append(secs, sections.Section{Name: "containers", Cmd: containers.Script()})
	res, runErr := sections.Run(ctx, env.Exec, out, secs, changeTimeout, upgradeIdle)
	if fr := res["facts"]; !fr.Done {
		return Result{}, nil, transportErr(runErr)
	}
	if factsErr != nil {
		return Result{}, nil, factsErr
	}
	fam, err := pkgmgr.FamilyFromOSRelease(f.OS.ID, f.OS.IDLike)
	if err == nil {
		if real, rerr := managerFor(fam, f.PackageManager); rerr != nil || real.Name() != m.Name() {
			fmt.Fprintf(out, "lcm: the server runs %s, not %s as recorded; refreshing with it\n", orDash(f.PackageManager), m.Name())
			f, inv, err := RefreshWithLists(ctx, env.Exec, out)
			if err != nil {
				return Result{}, nil, err
			}
			return refreshResult(env, RefreshData{Facts: f, Inventory: inv, Containers: refreshContainers(ctx, env.Exec, out)}, "inventory refreshed")
		}
	}
	rl := res["refresh-lists"]
	switch {
	case !rl.Done:
		return Result{}, nil, transportErr(runErr)
	case rl.Code != 0:
		return Result{ExitCode: rl.Code}, nil, failf("package lists could not be refreshed (%s exited with code %d): %s",
			m.Name(), rl.Code, managerMessage(string(rl.Stdout), ""))
	}
	var inv pkgmgr.Inventory
	if err != nil { // an unknown distribution: facts only
		fmt.Fprintf(out, "lcm: %v; package inventory skipped\n", err)
	} else {
		var raw inventoryRaw
		for _, x := range []struct {
			name string
			text *string
			code *int
		}{{"installed", &raw.installed, &raw.installedCode}, {"upgradable", &raw.upgradable, &raw.upgradableCode}, {"held", &raw.held, &raw.heldCode}} {
			s := res[x.name]
			switch {
			case s == nil:
			case !s.Done && x.name == "held":
				raw.heldErr = transportErr(runErr)
			case !s.Done:
				return Result{}, nil, transportErr(runErr)
			default:
				*x.text, *x.code = string(s.Stdout), s.Code
			}
		}
		if inv, err = parseInventory(m, raw, out); err != nil {
			return Result{}, nil, err
		}
	}
	var ci *containers.Inventory
	if cr := res["containers"]; cr.Done {
		var cinv containers.Inventory
		var cerr error
		if cr.Code != 0 {
			cerr = failf("the container listing exited with code %d", cr.Code)
		} else if cinv, cerr = containers.ParseCollect(cr.Stdout); cerr != nil {
			cerr = failf("the container listing could not be parsed: %v", cerr)
		}
		ci = reportContainers(ctx, cinv, cerr, out)
	} else {
		ci = reportContainers(ctx, containers.Inventory{}, transportErr(runErr), out)
	}
	return refreshResult(env, RefreshData{Facts: f, Inventory: inv, Containers: ci}, "inventory refreshed")
}
