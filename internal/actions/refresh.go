package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
)

// listTimeout bounds a package listing: dpkg-query and an apt simulation
// take seconds; rpm -qa on a slow disk tens of seconds.
const listTimeout = 5 * time.Minute

// Refresh collects the facts (one session running facts.Script()), detects
// the package-manager family and lists installed and upgradable packages
// from the package lists as they are on the server (a package action that
// refreshed them moments ago ends with this). Listing failures of an
// unknown distribution leave the inventory empty but keep the facts.
func Refresh(ctx context.Context, ex remote.Executor, out io.Writer) (facts.Facts, pkgmgr.Inventory, error) {
	return refresh(ctx, ex, out, false)
}

// RefreshWithLists is Refresh after bringing the package lists up to date
// (RefreshLists), so the outdated and security counts are what the server
// itself reports after its own list refresh: the refresh job. A failed
// list refresh fails it with the package manager's message.
func RefreshWithLists(ctx context.Context, ex remote.Executor, out io.Writer) (facts.Facts, pkgmgr.Inventory, error) {
	return refresh(ctx, ex, out, true)
}

func refresh(ctx context.Context, ex remote.Executor, out io.Writer, lists bool) (facts.Facts, pkgmgr.Inventory, error) {
	f, err := collectAll(ctx, ex, out)
	if err != nil {
		return facts.Facts{}, pkgmgr.Inventory{}, err
	}
	fam, err := pkgmgr.FamilyFromOSRelease(f.OS.ID, f.OS.IDLike)
	if err != nil {
		fmt.Fprintf(out, "lcm: %v; package inventory skipped\n", err)
		return f, pkgmgr.Inventory{}, nil
	}
	m, err := managerFor(fam, f.PackageManager)
	if err != nil {
		return f, pkgmgr.Inventory{}, failf("%v", err)
	}
	if lists {
		if _, err := RefreshLists(ctx, ex, out, m); err != nil {
			return f, pkgmgr.Inventory{}, err
		}
	}
	inv, err := listPackages(ctx, ex, out, m)
	return f, inv, err
}

// collectAll runs the facts collector (one session) and parses its output.
func collectAll(ctx context.Context, ex remote.Executor, out io.Writer) (facts.Facts, error) {
	raw, code, err := capture(ctx, ex, out, remote.Command{Cmd: facts.Script()})
	if err != nil {
		return facts.Facts{}, err
	}
	return parseFacts(raw, code, out)
}

// parseFacts parses the collector's output and prints the one-line
// summary.
func parseFacts(raw string, code int, out io.Writer) (facts.Facts, error) {
	if code != 0 {
		return facts.Facts{}, failf("facts collection exited with code %d", code)
	}
	f, err := facts.Parse([]byte(raw))
	if err != nil {
		return facts.Facts{}, failf("facts could not be parsed: %v", err)
	}
	fmt.Fprintf(out, "lcm: %s, kernel %s, host %s\n", orDash(f.OS.PrettyName), orDash(f.Kernel), orDash(f.Hostname))
	return f, nil
}

// managerFor picks the Manager; EL7 hosts that only have yum get yum.
func managerFor(fam pkgmgr.Family, detected string) (pkgmgr.Manager, error) {
	if fam == pkgmgr.FamilyDNF && detected == "yum" {
		return pkgmgr.NewDNF("yum"), nil
	}
	return pkgmgr.New(fam)
}

func listPackages(ctx context.Context, ex remote.Executor, out io.Writer, m pkgmgr.Manager) (pkgmgr.Inventory, error) {
	var raw inventoryRaw
	var err error
	raw.installed, raw.installedCode, err = capture(ctx, ex, out, remote.Command{Cmd: m.ListInstalled(), Timeout: listTimeout})
	if err != nil {
		return pkgmgr.Inventory{Manager: m.Name()}, err
	}
	if raw.installedCode == 0 {
		raw.upgradable, raw.upgradableCode, err = capture(ctx, ex, out, remote.Command{Cmd: m.ListUpgradable(), Timeout: listTimeout})
		if err != nil {
			return pkgmgr.Inventory{Manager: m.Name()}, err
		}
	}
	if h, ok := m.(pkgmgr.HoldLister); ok && raw.installedCode == 0 {
		raw.held, raw.heldCode, raw.heldErr = capture(ctx, ex, out, remote.Command{Cmd: h.ListHeld(), Timeout: listTimeout})
	}
	return parseInventory(m, raw, out)
}

// inventoryRaw is what the listing commands printed: installed and
// upgradable packages, and (for managers that hold packages) the held
// ones, with their exit codes; heldErr is a transport error of the held
// listing, which costs only the held entries.
type inventoryRaw struct {
	installed, upgradable, held             string
	installedCode, upgradableCode, heldCode int
	heldErr                                 error
}

// parseInventory turns the listings into the inventory and prints its
// summary line.
func parseInventory(m pkgmgr.Manager, raw inventoryRaw, out io.Writer) (pkgmgr.Inventory, error) {
	inv := pkgmgr.Inventory{Manager: m.Name()}
	if raw.installedCode != 0 {
		return inv, failf("listing installed packages exited with code %d", raw.installedCode)
	}
	var err error
	if inv.Packages, err = m.ParseInstalled([]byte(raw.installed)); err != nil {
		return inv, failf("installed packages could not be parsed: %v", err)
	}
	// dnf check-update exits 100 when updates exist; parsers judge output.
	if raw.upgradableCode != 0 && raw.upgradableCode != 100 {
		return inv, failf("listing upgradable packages exited with code %d", raw.upgradableCode)
	}
	if inv.Upgradable, err = m.ParseUpgradable([]byte(raw.upgradable)); err != nil {
		return inv, failf("upgradable packages could not be parsed: %v", err)
	}
	pkgmgr.FillCurrent(inv.Upgradable, inv.Packages)
	held := 0
	if h, ok := m.(pkgmgr.HoldLister); ok {
		held = addHeld(h, raw, out, &inv)
	}
	sec := 0
	for _, u := range inv.Upgradable {
		if u.Security {
			sec++
		}
	}
	fmt.Fprintf(out, "lcm: %d packages installed (%s), %d upgradable (%d held back), %d security\n", len(inv.Packages), m.Name(), len(inv.Upgradable), held, sec)
	return inv, nil
}

// addHeld adds the held packages with a newer candidate to inv and returns
// how many. A failure only costs the held entries: it is reported in the
// output, and the refresh goes on.
func addHeld(h pkgmgr.HoldLister, raw inventoryRaw, out io.Writer, inv *pkgmgr.Inventory) int {
	err := raw.heldErr
	if err == nil && raw.heldCode != 0 {
		err = fmt.Errorf("exit code %d", raw.heldCode)
	}
	var ups []pkgmgr.Upgradable
	if err == nil {
		ups, err = h.ParseHeld([]byte(raw.held))
	}
	if err != nil {
		fmt.Fprintf(out, "lcm: held packages could not be listed (%v); they are missing from the outdated list\n", err)
		return 0
	}
	n := len(inv.Upgradable)
	pkgmgr.AddHeld(inv, ups)
	return len(inv.Upgradable) - n
}

// RefreshData is what a refresh (or a package action, which ends with one)
// reports to the control plane; the worker has no database.
type RefreshData struct {
	Facts     facts.Facts      `json:"facts"`
	Inventory pkgmgr.Inventory `json:"inventory"`
	// Containers is the container inventory the refresh job read: nil when
	// it was not read (other jobs, or the listing failed), empty Engines
	// when the server has neither docker nor podman.
	Containers *containers.Inventory `json:"containers,omitempty"`
	// InventoryUnchanged: the packages equal the inventory the control
	// plane holds (credbox.Credentials.InventoryDigest, repeated in
	// InventoryDigest); Inventory then carries only the manager.
	InventoryUnchanged bool   `json:"inventory_unchanged,omitempty"`
	InventoryDigest    string `json:"inventory_digest,omitempty"`
}

// EncodeRefresh gzips the data for the job's final state message: 1,500
// packages are ~200 kB of JSON and ~13 kB gzipped, well inside NATS's 1 MB
// message limit even for hosts with 10,000 packages. klauspost's gzip
// writes the standard format at about twice the speed of compress/gzip
// (BenchmarkRefreshCodec); its writers are pooled, each holds ~1 MB of
// compressor state.
func EncodeRefresh(d RefreshData) ([]byte, error) {
	var b bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&b)
	if err := json.NewEncoder(zw).Encode(d); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// DecodeRefresh reverses EncodeRefresh.
func DecodeRefresh(b []byte) (RefreshData, error) {
	var d RefreshData
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return d, fmt.Errorf("actions: refresh data: %w", err)
	}
	defer zr.Close()
	if err := json.NewDecoder(io.LimitReader(zr, 64<<20)).Decode(&d); err != nil {
		return d, fmt.Errorf("actions: refresh data: %w", err)
	}
	return d, nil
}

// DecodeRefreshes decodes many refresh payloads at once, on every CPU
// (gunzip and JSON of 1,500 packages take milliseconds each, and the jobs
// ingest hands over hundreds together). An empty payload decodes to the
// zero RefreshData without error. It returns one result and one error per
// payload, in order.
func DecodeRefreshes(bs [][]byte) ([]RefreshData, []error) {
	out := make([]RefreshData, len(bs))
	errs := make([]error, len(bs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(bs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(bs); i = int(next.Add(1) - 1) {
				if len(bs[i]) > 0 {
					out[i], errs[i] = DecodeRefresh(bs[i])
				}
			}
		})
	}
	wg.Wait()
	return out, errs
}

// DataAction is an Action that also returns a payload for the control
// plane (the encoded RefreshData). The runner stores it in the job result.
type DataAction interface {
	Action
	RunData(ctx context.Context, env *Env) (Result, []byte, error)
}

// RefreshJob is the refresh job: facts, fresh package lists, the package
// inventory and the container inventory.
type RefreshJob struct{}

// Run implements Action (the payload is dropped; runners use RunData).
func (j RefreshJob) Run(ctx context.Context, env *Env) (Result, error) {
	r, _, err := j.RunData(ctx, env)
	return r, err
}

// RunData implements DataAction. With the server's package family known
// (every joined server's), the whole refresh is one sectioned session
// (refreshInOneSession); otherwise the facts decide the family first.
func (RefreshJob) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	if fam := pkgmgr.Family(env.Creds.PackageFamily); fam != "" && fam != pkgmgr.FamilyDNF {
		if m, err := pkgmgr.New(fam); err == nil {
			return refreshInOneSession(ctx, env, m)
		}
	}
	f, inv, err := RefreshWithLists(ctx, env.Exec, env.Out)
	if err != nil {
		return Result{}, nil, err
	}
	return refreshResult(env, RefreshData{Facts: f, Inventory: inv, Containers: refreshContainers(ctx, env.Exec, env.Out)}, "inventory refreshed")
}

// refreshContainers reads the container inventory for the refresh job.
// The collector is its own engine detection (`command -v docker podman`
// first, nothing else runs without an engine), so a server without one
// costs this single command and prints nothing. A failed listing costs
// only the container inventory (nil: the stored one stays): the package
// refresh already succeeded.
func refreshContainers(ctx context.Context, ex remote.Executor, out io.Writer) *containers.Inventory {
	inv, err := collect(ctx, ex)
	return reportContainers(ctx, inv, err, out)
}

// reportContainers prints what the container listing found (or why it
// failed) and returns the inventory the refresh reports (nil: keep the
// stored one).
func reportContainers(ctx context.Context, inv containers.Inventory, err error, out io.Writer) *containers.Inventory {
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(out, "lcm: the container inventory could not be read (%v); the stored one is kept\n", err)
		}
		return nil
	}
	if len(inv.Engines) > 0 {
		engines := make([]string, len(inv.Engines))
		for i, e := range inv.Engines {
			engines[i] = string(e.Engine)
		}
		fmt.Fprintf(out, "lcm: %s: %d containers, %d images, %d compose projects\n", strings.Join(engines, ", "), len(inv.Containers), len(inv.Images), len(inv.Compose))
	}
	return &inv
}

// refreshResult encodes d for the control plane. An inventory equal to
// the one the control plane holds (env's credentials name its digest) is
// sent as "unchanged": a fleet-wide run does not move every server's
// package list over the bus and through the ingest again.
func refreshResult(env *Env, d RefreshData, msg string) (Result, []byte, error) {
	if want := env.Creds.InventoryDigest; want != "" && d.Inventory.Digest() == want {
		d.Inventory = pkgmgr.Inventory{Manager: d.Inventory.Manager}
		d.InventoryUnchanged, d.InventoryDigest = true, want
	}
	f := d.Facts
	data, err := EncodeRefresh(d)
	if err != nil {
		return Result{}, nil, err
	}
	sf := &ServerFacts{OSName: f.OS.PrettyName, OSVersion: f.OS.VersionID, Kernel: f.Kernel,
		Virtualization: f.Virtualization.Type, Hostname: f.Hostname}
	if fam, err := pkgmgr.FamilyFromOSRelease(f.OS.ID, f.OS.IDLike); err == nil {
		sf.PackageFamily = string(fam)
	}
	return Result{Facts: sf, Message: msg}, data, nil
}

// StorageSampleJob is the hourly storage sample: the facts only (the
// filesystems are what the control plane keeps), no package listing. Its
// payload is RefreshData with an empty inventory.
type StorageSampleJob struct{}

// Run implements Action (the payload is dropped; runners use RunData).
func (j StorageSampleJob) Run(ctx context.Context, env *Env) (Result, error) {
	r, _, err := j.RunData(ctx, env)
	return r, err
}

// RunData implements DataAction.
func (StorageSampleJob) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	f, err := collectAll(ctx, env.Exec, env.Out)
	if err != nil {
		return Result{}, nil, err
	}
	data, err := EncodeRefresh(RefreshData{Facts: f})
	if err != nil {
		return Result{}, nil, err
	}
	return Result{Message: fmt.Sprintf("storage sampled (%d filesystems)", len(f.Filesystems))}, data, nil
}

// refreshAfter ends a package change with an inventory refresh, also after
// a failed change (which may have changed some packages); a cancelled job
// skips it. The change's error wins over a refresh error.
func refreshAfter(ctx context.Context, env *Env, r Result, actErr error, msg string) (Result, []byte, error) {
	if actErr != nil && ctx.Err() != nil {
		return r, nil, actErr
	}
	fmt.Fprintln(env.Out, "lcm: refreshing the inventory")
	f, inv, err := Refresh(ctx, env.Exec, env.Out)
	if err != nil {
		if actErr != nil {
			return r, nil, actErr
		}
		return r, nil, err
	}
	out, data, err := refreshResult(env, RefreshData{Facts: f, Inventory: inv}, msg)
	if err != nil {
		return r, nil, err
	}
	out.ExitCode = r.ExitCode
	return out, data, actErr
}
