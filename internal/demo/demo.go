// Package demo seeds example servers for demo mode (--demo) and simulates
// their jobs: every demo server is marked in the setting "demo_servers",
// and the jobs service's simulator answers their jobs in-process with
// canned output, so no demo server is ever contacted.
package demo

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
)

// SettingServers lists the ids of the demo servers.
const SettingServers = "demo_servers"

// historyDays of daily storage aggregates are seeded per server.
const historyDays = 60

const gib = 1 << 30

// Deps are Seed's collaborators.
type Deps struct {
	Store     *store.Store
	Inventory *inventory.Service
	Status    *status.Service
	Log       *slog.Logger
	Now       func() time.Time
}

// Result counts what Seed created.
type Result struct {
	Created, Existing int
}

// Seed creates the demo servers that do not exist yet (by name), with
// facts, packages, 60 days of storage history and CVE findings, and
// recomputes their statuses. Existing demo servers are left as they are,
// so seeding again changes nothing.
func Seed(ctx context.Context, d Deps) (Result, error) {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Now == nil {
		d.Now = func() time.Time { return time.Now().UTC() }
	}
	var res Result
	for _, sp := range Servers() {
		found, err := d.Store.ListServers(ctx, store.SystemScope, store.ServerFilter{Q: sp.Name})
		if err != nil {
			return res, err
		}
		if len(found) > 0 {
			res.Existing++
			continue
		}
		if err := seedOne(ctx, d, sp); err != nil {
			return res, fmt.Errorf("demo: seed %s: %w", sp.Name, err)
		}
		res.Created++
	}
	if res.Created > 0 {
		d.Log.Info("demo data seeded", "servers", res.Created)
	}
	return res, nil
}

func seedOne(ctx context.Context, d Deps, sp Spec) error {
	srv, err := d.Store.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: sp.Name, Host: sp.Host, Port: 22,
		Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, Joined: true,
		HostKey: hostKey(sp.Name), HostKeyFingerprint: fingerprint(sp.Name), PackageFamily: string(sp.Family)},
		Secrets: store.ServerSecrets{Username: domain.ManagementUser}})
	if err != nil {
		return err
	}
	// Mark it first: from now on its jobs are simulated.
	if err := addMarker(ctx, d.Store, srv.ID); err != nil {
		return err
	}
	f := sp.facts()
	if err := d.Store.RecordServerFacts(ctx, srv.ID, store.ServerFacts{OSName: f.OS.Name, OSVersion: f.OS.VersionID,
		Kernel: f.Kernel, Virtualization: f.Virtualization.Type, Hostname: f.Hostname, PkgFamily: string(sp.Family)}); err != nil {
		return err
	}
	if err := d.Inventory.Ingest(ctx, srv.ID, f, sp.inventory()); err != nil {
		return err
	}
	if err := d.Store.ReplaceStorageDaily(ctx, srv.ID, "/", sp.history(d.Now())); err != nil {
		return err
	}
	if _, err := d.Status.SetFindings(ctx, srv.ID, sp.Findings); err != nil {
		return err
	}
	_, err = d.Status.RecordContact(ctx, srv.ID, true, "")
	return err
}

// IDs returns the ids of the demo servers.
func IDs(ctx context.Context, st *store.Store) ([]string, error) {
	var ids []string
	_, err := st.GetSetting(ctx, SettingServers, &ids)
	return ids, err
}

func addMarker(ctx context.Context, st *store.Store, id string) error {
	ids, err := IDs(ctx, st)
	if err != nil {
		return err
	}
	if slices.Contains(ids, id) {
		return nil
	}
	return st.PutSetting(ctx, SettingServers, append(ids, id))
}

// Simulator is the jobs simulator for demo servers: their jobs succeed
// in-process; jobs that change or refresh packages run on the server's
// stored state (simulate.go), the others print canned output. Every other
// server's jobs go to a worker.
func Simulator(st *store.Store, log *slog.Logger) jobs.Simulator {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, job domain.Job) (jobs.Simulation, bool) {
		ids, err := IDs(ctx, st)
		if err != nil {
			log.Warn("demo: marker unreadable, job not simulated", "err", err)
			return jobs.Simulation{}, false
		}
		if !slices.Contains(ids, job.ServerID) {
			return jobs.Simulation{}, false
		}
		if carriesRefresh(job.Kind) {
			sim, err := simulateState(ctx, st, job)
			if err == nil {
				return sim, true
			}
			log.Warn("demo: simulated state unreadable, canned output only", "job_id", job.ID, "server_id", job.ServerID, "err", err)
		}
		return jobs.Simulation{Output: Output(job)}, true
	}
}

// header is the first line of a demo job's output.
func header(job domain.Job) string {
	sp, _ := specByName(job.ServerName)
	return fmt.Sprintf("==> %s on %s (%s) [demo: simulated, no connection made]\n", job.Name(), job.ServerName, sp.Pretty)
}

// rebootSeconds is a stable, plausible reboot duration per server (30–89 s).
func rebootSeconds(host string) int {
	return 30 + int(sha256.Sum256([]byte(host))[0])%60
}

// Output is a demo job's canned console output (the seeded specification,
// not the stored state: for jobs that do not touch packages, and when the
// state cannot be read).
func Output(job domain.Job) []string {
	sp, _ := specByName(job.ServerName)
	host := job.ServerName
	out := append([]string{header(job)}, jobListsRefresh(job, sp.Family)...)
	switch job.Kind {
	case domain.JobConnectivity, domain.JobReconnect:
		out = append(out, "Connecting to "+sp.Host+":22 as lcm … host key matches pinned "+fingerprint(host)+"\n",
			"sudo -n true … ok\n", "Kernel "+sp.Kernel+", uptime 41 days\n")
	case domain.JobUpgradeSecurity:
		for _, u := range sp.Outdated {
			if u.Security {
				out = append(out, fmt.Sprintf("Upgrading %s %s -> %s\n", u.Name, u.Current, u.Candidate))
			}
		}
		out = append(out, "Security updates installed.\n")
	case domain.JobRotateKey:
		out = append(out, "Generated a new ed25519 management key\n", "New key proven, old key removed\n")
	case domain.JobPackageAction:
		var p actions.PackageParams
		_ = json.Unmarshal(job.Params, &p)
		out = append(append(out, packageOutput(sp, p)...), refreshOutput(sp)...)
	case domain.JobReboot:
		secs := rebootSeconds(host)
		out = append(out, "Boot id "+bootID(host, 0)+"\n", "Rebooting (systemctl reboot) …\n",
			"Waiting for the server to come back …\n",
			fmt.Sprintf("Server is back after %d s (boot id %s)\n", secs, bootID(host, 1)))
	case domain.JobStorageSample:
		total := float64(sp.DiskGiB)
		out = append(out, fmt.Sprintf("/: %.1f GiB of %.0f GiB used (%.0f %%)\n", sp.UsedEnd*total, total, sp.UsedEnd*100))
	default:
		out = append(out, refreshOutput(sp)...)
	}
	return append(out, "==> finished successfully\n")
}

func refreshOutput(sp Spec) []string {
	return []string{"Collecting facts … ok\n", fmt.Sprintf("Listing packages … %d installed, %d upgradable\n",
		len(sp.Packages), len(sp.Outdated))}
}

// packageOutput is what a package action prints on a demo server.
func packageOutput(sp Spec, p actions.PackageParams) []string {
	outdated := map[string]pkgmgr.Upgradable{}
	for _, u := range sp.Outdated {
		outdated[u.Name] = u
	}
	installed := map[string]bool{}
	for _, pk := range sp.Packages {
		name, _, _ := strings.Cut(pk, "=")
		installed[name] = true
	}
	var out []string
	upgrade := func(u pkgmgr.Upgradable) {
		out = append(out, fmt.Sprintf("Upgrading %s %s -> %s\n", u.Name, u.Current, u.Candidate))
	}
	switch p.Action {
	case actions.PkgRefreshLists:
		out = append(out, "Refreshing the package lists … done\n")
	case actions.PkgUpgradeAll, actions.PkgUpgradeSecurity:
		n := 0
		for _, u := range sp.Outdated {
			if p.Action == actions.PkgUpgradeAll || u.Security {
				upgrade(u)
				n++
			}
		}
		out = append(out, fmt.Sprintf("%d upgraded, 0 newly installed, 0 to remove\n", n))
	case actions.PkgUpdate:
		for _, name := range p.Names {
			if u, ok := outdated[name]; ok {
				upgrade(u)
			} else {
				out = append(out, name+" is already the newest version\n")
			}
		}
	case actions.PkgRemove:
		for _, name := range p.Names {
			if installed[name] {
				out = append(out, "Removing "+name+" …\n")
			} else {
				out = append(out, "Package "+name+" is not installed, so not removed\n")
			}
		}
	case actions.PkgAutoremove:
		out = append(out, "0 upgraded, 0 newly installed, 2 to remove\n", "Removing libfuse2 …\n", "Removing linux-image-6.1.0-18-amd64 …\n")
	case actions.PkgKernelCleanup:
		out = append(out, "Running kernel "+sp.Kernel+" is kept, and the newest installed one\n", "Removing 1 older kernel …\n")
	case actions.PkgHold:
		for _, name := range p.Names {
			out = append(out, name+" set on hold.\n")
		}
	case actions.PkgUnhold:
		for _, name := range p.Names {
			out = append(out, "Canceled hold on "+name+".\n")
		}
	}
	return out
}

// bootID is a stable demo boot id of a server's n-th boot.
func bootID(host string, n int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("lcm-demo-boot:%s:%d", host, n)))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// hostKey derives a stable, well-formed demo host key from the name.
func hostKey(name string) string {
	seed := sha256.Sum256([]byte("lcm-demo-host-key:" + name))
	k, _ := ssh.NewPublicKey(ed25519.NewKeyFromSeed(seed[:]).Public())
	return sshexec.AuthorizedKey(k)
}

func fingerprint(name string) string {
	k, _, _, _, _ := ssh.ParseAuthorizedKey([]byte(hostKey(name)))
	return ssh.FingerprintSHA256(k)
}

// history returns daily aggregates of "/" for the last historyDays days.
func (sp Spec) history(now time.Time) []store.StorageDay {
	total := int64(sp.DiskGiB) * gib
	days := make([]store.StorageDay, historyDays)
	for i := range days {
		day := now.AddDate(0, 0, i-historyDays)
		frac := sp.UsedStart + (sp.UsedEnd-sp.UsedStart)*float64(i)/float64(historyDays-1)
		frac += 0.004 * math.Sin(float64(i)) // daily wobble
		used := int64(frac * float64(total))
		days[i] = store.StorageDay{Day: day.Format("2006-01-02"), AvgUsed: used, MaxUsed: used + used/200,
			TotalBytes: total, Samples: 24}
	}
	return days
}

func (sp Spec) facts() facts.Facts {
	total := uint64(sp.DiskGiB) * gib
	used := uint64(sp.UsedEnd * float64(total))
	return facts.Facts{
		OS: facts.OSRelease{ID: sp.OSID, IDLike: sp.IDLike, Name: sp.OSName, PrettyName: sp.Pretty,
			VersionID: sp.Version, Codename: sp.Codename},
		Kernel: sp.Kernel, Arch: "x86_64", Hostname: sp.Name, UptimeSeconds: 41*86400 + 3600,
		Virtualization: facts.Virtualization{Role: "guest", Type: "kvm", Source: "systemd-detect-virt"},
		CPU:            facts.CPU{Model: "AMD EPYC 7543P 32-Core Processor", Sockets: 1, Cores: sp.CPUs, Threads: sp.CPUs},
		Memory: facts.Memory{TotalBytes: uint64(sp.MemGiB) * gib, AvailableBytes: uint64(sp.MemGiB) * gib * 6 / 10,
			SwapTotalBytes: gib, SwapFreeBytes: gib},
		Filesystems: []facts.Filesystem{{Device: "/dev/vda1", Type: "ext4", MountPoint: "/", SizeBytes: total,
			UsedBytes: used, AvailBytes: total - used}},
		Addresses:      []facts.Address{{Interface: "eth0", Family: "inet", Address: sp.Host, PrefixLen: 24, Scope: "global"}},
		Reboot:         facts.Reboot{Required: sp.Reboot, Reason: map[bool]string{true: "kernel updated"}[sp.Reboot]},
		PackageManager: string(sp.Family),
	}
}

func (sp Spec) inventory() pkgmgr.Inventory {
	inv := pkgmgr.Inventory{Manager: string(sp.Family), Upgradable: sp.Outdated}
	for _, p := range sp.Packages {
		name, ver, _ := strings.Cut(p, "=")
		inv.Packages = append(inv.Packages, pkgmgr.Package{Name: name, Version: ver, Arch: sp.arch(), Manager: string(sp.Family)})
	}
	return inv
}

func (sp Spec) arch() string {
	switch sp.Family {
	case pkgmgr.FamilyAPT:
		return "amd64"
	}
	return "x86_64"
}
