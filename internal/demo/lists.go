package demo

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/pkgmgr"
)

// listsRefresh is what a simulated job prints before it decides what to
// install, as the real job does (actions.RefreshLists): how old the
// package lists were (a stable, plausible age per server, 2–71 hours) and
// what was refreshed. pacman's upgrade-all refreshes inside -Syu.
func listsRefresh(host string, family pkgmgr.Family, kind domain.JobKind, action actions.PkgAction) []string {
	if !actions.RefreshesLists(kind, action) {
		return nil
	}
	m, err := pkgmgr.New(family)
	if err != nil {
		// A stored manager name ("yum", "apt-get") rather than a family.
		f, ok := pkgmgr.FamilyOfBinary(string(family))
		if !ok {
			return nil
		}
		family = f
		if m, err = pkgmgr.New(f); err != nil {
			return nil
		}
	}
	sum := sha256.Sum256([]byte(host))
	age := time.Duration(2+int(sum[1])%70)*time.Hour + time.Duration(sum[2]%60)*time.Minute
	now := time.Now().UTC().Truncate(time.Second)
	a := pkgmgr.ListsAge{Now: now, Newest: now.Add(-age), Oldest: now.Add(-age - 9*24*time.Hour), Files: 3}
	out := []string{"lcm: " + actions.DescribeListsAge(a, nil) + "\n"}
	if family == pkgmgr.FamilyPacman && kind == domain.JobPackageAction && action == actions.PkgUpgradeAll {
		return append(out, actions.PacmanSyu+"\n")
	}
	return append(out, "lcm: refreshing "+actions.RefreshWhat(m)+"\n",
		fmt.Sprintf("lcm: package lists refreshed in %.1fs\n", 1+float64(sum[3]%40)/10))
}

// jobListsRefresh is listsRefresh for a job (its package action, if any,
// from the params).
func jobListsRefresh(job domain.Job, family pkgmgr.Family) []string {
	var p actions.PackageParams
	if job.Kind == domain.JobPackageAction {
		_ = json.Unmarshal(job.Params, &p)
	}
	return listsRefresh(job.ServerName, family, job.Kind, p.Action)
}
