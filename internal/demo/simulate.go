package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
)

// A demo server's simulated state is its stored inventory: a job that
// changes packages (a security upgrade, a package action, a reboot) reads
// it, applies what the action would do on a real server, prints that, and
// ends with the new state as refresh data, which the finish hooks ingest
// like a worker's (packages, outdated list, counters, traffic light). A
// refresh reports the state unchanged. Vulnerability findings a simulated
// upgrade fixed (their package now at the fixed version) are dropped, as a
// new scan would.

// carriesRefresh reports whether jobs of kind k end with refresh data
// (cmd/api's registerInventoryHooks ingests these kinds).
func carriesRefresh(k domain.JobKind) bool {
	return k == domain.JobRefresh || k == domain.JobPackageAction || k == domain.JobUpgradeSecurity || k == domain.JobReboot
}

// state is a demo server's inventory as a refresh reports it.
type state struct {
	facts facts.Facts
	inv   pkgmgr.Inventory
}

func loadState(ctx context.Context, st *store.Store, id string) (state, error) {
	var s state
	f, err := st.ServerFactsOf(ctx, store.SystemScope, id)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(f.FactsJSON, &s.facts); err != nil {
		return s, fmt.Errorf("demo: stored facts: %w", err)
	}
	pks, err := st.ServerPackages(ctx, store.SystemScope, id)
	if err != nil {
		return s, err
	}
	od, err := st.ServerOutdated(ctx, store.SystemScope, id)
	if err != nil {
		return s, err
	}
	s.inv.Manager = f.PackageManager
	for _, p := range pks {
		s.inv.Packages = append(s.inv.Packages, pkgmgr.Package{Name: p.Name, Version: p.Version, Arch: p.Arch, Source: p.Source, Manager: p.Manager})
	}
	for _, u := range od {
		s.inv.Upgradable = append(s.inv.Upgradable, pkgmgr.Upgradable{Name: u.Name, Current: u.Current, Candidate: u.Candidate,
			Arch: u.Arch, Security: u.Security, Held: u.Held})
	}
	return s, nil
}

// rebootPackages are the packages whose upgrade makes a server need a
// reboot (the kernel and what every process links or runs under).
var rebootPackages = []string{"linux", "kernel", "libc6", "glibc", "musl", "systemd"}

func needsReboot(name string) bool {
	for _, p := range rebootPackages {
		if name == p || strings.HasPrefix(name, p+"-") {
			return true
		}
	}
	return false
}

// upgrade installs the candidates of the outdated packages pick selects
// (held ones stay back, as apt, dnf and zypper keep them) and returns them.
func (s *state) upgrade(pick func(pkgmgr.Upgradable) bool) []pkgmgr.Upgradable {
	var done []pkgmgr.Upgradable
	var left []pkgmgr.Upgradable
	for _, u := range s.inv.Upgradable {
		if u.Held || !pick(u) {
			left = append(left, u)
			continue
		}
		done = append(done, u)
		for i, p := range s.inv.Packages {
			if p.Name == u.Name && (u.Arch == "" || p.Arch == u.Arch) {
				s.inv.Packages[i].Version = u.Candidate
			}
		}
		if needsReboot(u.Name) {
			s.facts.Reboot.Required = true
			if s.inv.Manager == string(pkgmgr.FamilyAPT) {
				s.facts.Reboot.Reason = "reboot-required-file"
				if !slices.Contains(s.facts.Reboot.Packages, u.Name) {
					s.facts.Reboot.Packages = append(s.facts.Reboot.Packages, u.Name)
				}
			} else {
				s.facts.Reboot.Reason = "needs-restarting"
			}
		}
	}
	s.inv.Upgradable = left
	return done
}

func (s *state) installed(name string) bool {
	return slices.ContainsFunc(s.inv.Packages, func(p pkgmgr.Package) bool { return p.Name == name })
}

// apply changes the state as the job would and returns its output lines
// (without the header and the closing line) and the upgraded packages.
func (s *state) apply(job domain.Job) ([]string, []pkgmgr.Upgradable) {
	var out []string
	var done []pkgmgr.Upgradable
	upgrade := func(pick func(pkgmgr.Upgradable) bool) {
		done = s.upgrade(pick)
		for _, u := range done {
			out = append(out, fmt.Sprintf("Upgrading %s %s -> %s\n", u.Name, u.Current, u.Candidate))
		}
		out = append(out, fmt.Sprintf("%d upgraded, 0 newly installed, 0 to remove, %d not upgraded\n", len(done), len(s.inv.Upgradable)))
	}
	security := func(u pkgmgr.Upgradable) bool { return u.Security }
	switch job.Kind {
	case domain.JobUpgradeSecurity:
		upgrade(security)
		out = append(out, "Security updates installed.\n")
	case domain.JobReboot:
		sp, _ := specByName(job.ServerName)
		secs := rebootSeconds(job.ServerName)
		out = append(out, "Boot id "+bootID(sp.Name, 0)+"\n", "Rebooting (systemctl reboot) …\n",
			"Waiting for the server to come back …\n",
			fmt.Sprintf("Server is back after %d s (boot id %s)\n", secs, bootID(sp.Name, 1)))
		s.facts.Reboot = facts.Reboot{}
		s.facts.UptimeSeconds = int64(secs)
	case domain.JobPackageAction:
		var p actions.PackageParams
		_ = json.Unmarshal(job.Params, &p)
		names := func(u pkgmgr.Upgradable) bool { return slices.Contains(p.Names, u.Name) }
		switch p.Action {
		case actions.PkgRefreshLists:
			out = append(out, "Refreshing the package lists … done\n")
		case actions.PkgUpgradeAll:
			upgrade(func(pkgmgr.Upgradable) bool { return true })
		case actions.PkgUpgradeSecurity:
			upgrade(security)
		case actions.PkgUpdate:
			upgrade(names)
			for _, n := range p.Names {
				if !slices.ContainsFunc(done, func(u pkgmgr.Upgradable) bool { return u.Name == n }) {
					out = append(out, n+" is already the newest version (or held)\n")
				}
			}
		case actions.PkgRemove:
			for _, n := range p.Names {
				if !s.installed(n) {
					out = append(out, "Package "+n+" is not installed, so not removed\n")
					continue
				}
				out = append(out, "Removing "+n+" …\n")
				s.inv.Packages = slices.DeleteFunc(s.inv.Packages, func(pk pkgmgr.Package) bool { return pk.Name == n })
				s.inv.Upgradable = slices.DeleteFunc(s.inv.Upgradable, func(u pkgmgr.Upgradable) bool { return u.Name == n })
			}
		case actions.PkgAutoremove:
			out = append(out, "0 upgraded, 0 newly installed, 0 to remove\n")
		case actions.PkgKernelCleanup:
			out = append(out, "Running kernel "+s.facts.Kernel+" is kept, and the newest installed one\n", "No older kernel to remove\n")
		case actions.PkgHold, actions.PkgUnhold:
			hold := p.Action == actions.PkgHold
			for _, n := range p.Names {
				for i := range s.inv.Upgradable {
					if s.inv.Upgradable[i].Name == n {
						s.inv.Upgradable[i].Held = hold
					}
				}
				if hold {
					out = append(out, n+" set on hold.\n")
				} else {
					out = append(out, "Canceled hold on "+n+".\n")
				}
			}
		}
	}
	return out, done
}

// simulateState runs a refresh-carrying job of a demo server on its
// stored state.
func simulateState(ctx context.Context, st *store.Store, job domain.Job) (jobs.Simulation, error) {
	s, err := loadState(ctx, st, job.ServerID)
	if err != nil {
		return jobs.Simulation{}, err
	}
	lines, done := s.apply(job)
	out := append(append([]string{header(job)}, jobListsRefresh(job, pkgmgr.Family(s.inv.Manager))...), lines...)
	out = append(out, "Collecting facts … ok\n", fmt.Sprintf("Listing packages … %d installed, %d upgradable\n",
		len(s.inv.Packages), len(s.inv.Upgradable)), "==> finished successfully\n")
	data, err := actions.EncodeRefresh(actions.RefreshData{Facts: s.facts, Inventory: s.inv})
	if err != nil {
		return jobs.Simulation{}, err
	}
	sim := jobs.Simulation{Output: out, Data: data}
	if len(done) > 0 {
		sim.BeforeFinish = func(ctx context.Context) error { return dropFixed(ctx, st, job.ServerID, done) }
	}
	return sim, nil
}

// dropFixed removes the findings whose package an upgrade brought to the
// fixed version.
func dropFixed(ctx context.Context, st *store.Store, id string, done []pkgmgr.Upgradable) error {
	fs, err := st.ServerFindings(ctx, id)
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(slices.Clone(fs), func(f store.Finding) bool {
		return slices.ContainsFunc(done, func(u pkgmgr.Upgradable) bool { return u.Name == f.Package && u.Candidate == f.FixedIn })
	})
	if len(kept) == len(fs) {
		return nil
	}
	return st.SetFindings(ctx, id, kept)
}
