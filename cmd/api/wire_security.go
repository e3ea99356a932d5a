package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

// rescanKinds are the jobs after which a server is rescanned: those that
// can change its packages, and container actions (a container refresh
// reads the packages of CVE-relevant containers, a pull or compose update
// changes them).
var rescanKinds = []domain.JobKind{domain.JobRefresh, domain.JobPackageAction, domain.JobUpgradeSecurity, domain.JobContainer}

// wireSecurity builds the vulnerability service and, unless
// scanner.disabled, starts an in-process scanner that speaks the same NATS
// protocol as lcm-scanner (queue group "scanners"). After every job that
// can change packages, the affected servers are rescanned.
func (a *app) wireSecurity(ctx context.Context, fl *fleet.Service, js *jobs.Service, st *status.Service) *vulnsvc.Service {
	svc := vulnsvc.New(a.store, st, &scanner.Client{Bus: a.bus}, a.log)
	svc.SetUpgrader(fl)
	// The object store of uploaded exports is the control plane's to
	// create: a remote scanner's NATS account may only use it.
	if _, err := scanner.VulnDBStore(ctx, a.bus); err != nil {
		a.log.Error("vulnerability database object store", "err", err)
	}
	if !a.cfg.Scanner.Disabled {
		dir := a.cfg.Scanner.DBDir
		if dir == "" {
			dir = "vulndb"
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(a.dataDir, dir)
		}
		if err := os.MkdirAll(dir, 0o750); err != nil {
			a.log.Error("vulnerability database directory", "dir", dir, "err", err)
		}
		host, _ := os.Hostname()
		sc := scanner.New(dir, fmt.Sprintf("%s/%d (in-process)", host, os.Getpid()), a.log)
		if a.cfg.Scanner.Engine == scanner.EngineTrivy {
			bin := a.cfg.Scanner.TrivyBin
			if bin == "" {
				bin = scanner.FindTrivy()
			}
			if bin == "" {
				a.log.Error("scanner.engine is trivy but no trivy binary was found; using the built-in OSV matcher")
			} else {
				sc.Trivy = &scanner.Trivy{Bin: bin, CacheDir: a.cfg.Scanner.TrivyCacheDir}
			}
		}
		sc.RegisterMetrics(a.log)
		go safe.Supervise(ctx, "in-process scanner", func(ctx context.Context) error { return sc.Serve(ctx, a.bus, 2) })
	} else {
		a.log.Info("in-process scanner disabled; vulnerability scans need an lcm-scanner")
	}
	rescan := func(ctx context.Context, done []domain.Job) []error {
		ids := make([]string, 0, len(done))
		for _, j := range done {
			if j.Status == domain.JobSuccess {
				ids = append(ids, j.ServerID)
			}
		}
		if len(ids) > 0 {
			safe.Go("vulnerability rescan", func() { svc.Rescan(context.WithoutCancel(ctx), ids) })
		}
		return make([]error, len(done))
	}
	for _, k := range rescanKinds {
		js.OnFinishBatch(k, rescan)
	}
	return svc
}
