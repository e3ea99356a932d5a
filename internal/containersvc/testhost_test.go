package containersvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

// hostSetup makes test host 14 a Podman server: podman and runc from
// Debian, the cgroup v1 hierarchies mounted in the host's own mount
// namespace (testhosts.sh bind-mounts /sys without its submounts, and
// runc needs them), containers.conf with runc and the ulimits this machine
// needs, and a small image imported from the host's own /bin (no registry
// is reachable). Every step is idempotent.
const hostSetup = `set -e
command -v podman >/dev/null && command -v runc >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc >/tmp/lcm-apt.log 2>&1
if ! grep -q ' /sys/fs/cgroup/pids ' /proc/self/mountinfo; then
  mountpoint -q /sys/fs/cgroup || mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
  for c in cpu cpuacct cpuset memory devices freezer blkio pids; do mkdir -p /sys/fs/cgroup/$c; mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c; done
  mkdir -p /sys/fs/cgroup/systemd; mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
fi
mkdir -p /etc/containers
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024","nproc=1024:1024"]\n[engine]\nruntime = "runc"\n' >/etc/containers/containers.conf
podman rm -f -a >/dev/null
podman rmi -f -a >/dev/null 2>&1 || true
r=$(mktemp -d); mkdir -p $r/bin $r/lib/x86_64-linux-gnu $r/lib64 $r/tmp $r/proc $r/dev $r/sys $r/etc
cp /bin/sleep /bin/sh /bin/true $r/bin/; cp /lib/x86_64-linux-gnu/libc.so.6 $r/lib/x86_64-linux-gnu/; cp /lib64/ld-linux-x86-64.so.2 $r/lib64/
tar -C $r -c . | podman import - localhost/mini:1 >/dev/null
rm -rf $r
podman run -d --network none --name lcme-app localhost/mini:1 /bin/sh -c 'trap "exit 0" TERM; while :; do sleep 1; done' >/dev/null
podman run --network none --name lcme-done localhost/mini:1 /bin/true
podman commit -q lcme-done localhost/mini:unused >/dev/null
podman commit -q lcme-done localhost/mini:remove-me >/dev/null
`

// TestContainersOnTestHost runs LCM's container jobs against a real Podman
// on test host 14: refresh, remove-image refused while in use (on the
// server and, once the inventory is known, before submitting), stop and
// start read back, removing an unused image, prune dry run and prune with
// what was freed, and the CVE mark.
func TestContainersOnTestHost(t *testing.T) {
	h := testutil.TestHostAt(t, 14)
	ctx := context.Background()
	p := plane.Start(t, plane.Options{})
	testutil.LockTestHost(t, h)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	root, err := sshexec.Dial(ctx, sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var out bytes.Buffer
	res, err := root.Run(ctx, remote.Command{Cmd: hostSetup, Stdout: &out, Stderr: &out, Timeout: 10 * time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("podman on test host 14: %v exit %d\n%s", err, res.ExitCode, out.String())
	}
	srv, err := p.Store.CreateServer(ctx, store.NewServer{
		Server: domain.Server{Name: "ctr-host-14", Host: h.Host, Port: h.Port, Transport: domain.TransportSSH, Status: domain.ServerGreen,
			Joined: true, AuthMethod: domain.AuthKey, HostKey: h.HostKeys[0], PackageFamily: "apt"},
		Secrets: store.ServerSecrets{Username: "root", PrivateKey: string(h.PrivateKey)},
	})
	if err != nil {
		t.Fatal(err)
	}
	svc := New(p.Store, p.Jobs, nil)
	svc.RegisterJobs()

	// run submits params and waits for the job and its finish hook (the
	// stored inventory names the job).
	run := func(params actions.ContainerParams, want domain.JobStatus) (domain.Job, ServerView) {
		t.Helper()
		j, err := svc.Submit(ctx, p.Admin, srv.ID, params)
		if err != nil {
			t.Fatalf("%s: %v", params.Op, err)
		}
		done := p.WaitJob(t, j.ID, 5*time.Minute)
		o, _ := p.Jobs.Output(ctx, p.Admin, j.ID, 0)
		if done.Status != want {
			t.Fatalf("%s: job %s (%s), want %s\n%s", params.Op, done.Status, done.Error, want, o.Output)
		}
		var v ServerView
		testutil.WaitFor(t, 30*time.Second, "inventory of job "+j.ID, func() bool {
			v, err = svc.Server(ctx, p.Admin, srv.ID)
			return err == nil && v.JobID == j.ID
		})
		return done, v
	}
	find := func(v ServerView, name string) containers.Container {
		t.Helper()
		for _, c := range v.Containers {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("container %s not in %+v", name, v.Containers)
		return containers.Container{}
	}
	hasImage := func(v ServerView, ref string) bool {
		for _, im := range v.Images {
			if im.Ref() == ref {
				return true
			}
		}
		return false
	}

	// Removing the image in use before LCM knows the inventory: the job
	// refuses on the server, and the image stays.
	_, v := run(actions.ContainerParams{Op: actions.ContainerRemoveImage, Image: "localhost/mini:1"}, domain.JobFailed)
	if v.LastAction == nil || v.LastAction.Code != "image_in_use" || !hasImage(v, "localhost/mini:1") {
		t.Fatalf("remove in use: %+v", v.LastAction)
	}

	_, v = run(actions.ContainerParams{Op: actions.ContainerRefresh}, domain.JobSuccess)
	if len(v.Engines) != 1 || v.Engines[0].Engine != containers.Podman || v.Engines[0].Version == "" {
		t.Fatalf("engines %+v", v.Engines)
	}
	app := find(v, "lcme-app")
	if app.State != "running" || app.ImageDigest == "" || app.StartedAt == nil || app.Update != containers.UpdateNotChecked {
		t.Fatalf("lcme-app %+v", app)
	}
	if d := find(v, "lcme-done"); d.State != "exited" {
		t.Fatalf("lcme-done %+v", d)
	}

	// Now the inventory is known: refused before a job is submitted.
	_, err = svc.Submit(ctx, p.Admin, srv.ID, actions.ContainerParams{Op: actions.ContainerRemoveImage, Image: "localhost/mini:1"})
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "image_in_use" || !strings.Contains(de.Message, "lcme-app") {
		t.Fatalf("remove in use after refresh: %v", err)
	}

	_, v = run(actions.ContainerParams{Op: actions.ContainerStop, Container: "lcme-app"}, domain.JobSuccess)
	if c := find(v, "lcme-app"); c.State == "running" || !v.LastAction.OK {
		t.Fatalf("after stop: %+v %+v", c, v.LastAction)
	}
	_, v = run(actions.ContainerParams{Op: actions.ContainerStart, Container: "lcme-app"}, domain.JobSuccess)
	if c := find(v, "lcme-app"); c.State != "running" || !c.StartedAt.After(*app.StartedAt) {
		t.Fatalf("after start: %+v", c)
	}

	_, v = run(actions.ContainerParams{Op: actions.ContainerRemoveImage, Image: "localhost/mini:remove-me"}, domain.JobSuccess)
	if hasImage(v, "localhost/mini:remove-me") || !v.LastAction.OK {
		t.Fatalf("after remove: %+v", v.LastAction)
	}

	spec := &actions.PruneSpec{Containers: true, Images: true, AllImages: true, DryRun: true}
	_, v = run(actions.ContainerParams{Op: actions.ContainerPrune, Prune: spec}, domain.JobSuccess)
	wf := v.LastAction.WillFree
	if wf == nil || strings.Join(wf.Containers, ",") != "lcme-done" || strings.Join(wf.Images, ",") != "localhost/mini:unused" || wf.ImageBytes <= 0 {
		t.Fatalf("dry run: %+v", v.LastAction)
	}
	find(v, "lcme-done") // a dry run removes nothing
	spec.DryRun = false
	_, v = run(actions.ContainerParams{Op: actions.ContainerPrune, Prune: spec}, domain.JobSuccess)
	fr := v.LastAction.Freed
	if fr == nil || strings.Join(fr.Containers, ",") != "lcme-done" || strings.Join(fr.Images, ",") != "localhost/mini:unused" || fr.ImageBytes <= 0 {
		b, _ := json.Marshal(v.LastAction)
		t.Fatalf("prune: %s", b)
	}
	if hasImage(v, "localhost/mini:unused") || len(v.Containers) != 1 || find(v, "lcme-app").State != "running" {
		t.Fatalf("after prune: %+v", v.Containers)
	}

	if err := svc.SetCVERelevance(ctx, p.Admin, srv.ID, "", "lcme-app", true); err != nil {
		t.Fatal(err)
	}
	if v, err = svc.Server(ctx, p.Admin, srv.ID); err != nil || !find(v, "lcme-app").CVERelevant {
		t.Fatalf("cve mark: %v", err)
	}
	cs, err := svc.Containers(ctx, p.Admin, FleetFilter{State: "running", Update: containers.UpdateNotChecked})
	if err != nil || len(cs) != 1 || cs[0].ServerName != "ctr-host-14" {
		t.Fatalf("fleet containers %+v %v", cs, err)
	}

	// CVE-relevant containers feed the vulnerability scan: an image with
	// a real Debian 12 dpkg database (the host's own, on mini's files),
	// a stopped container of it marked CVE-relevant; the container
	// refresh reads its packages and the server's SBOM lists them.
	out.Reset()
	res, err = root.Run(ctx, remote.Command{Cmd: debImageSetup, Stdout: &out, Stderr: &out, Timeout: 5 * time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("dpkg image on test host 14: %v exit %d\n%s", err, res.ExitCode, out.String())
	}
	run(actions.ContainerParams{Op: actions.ContainerRefresh}, domain.JobSuccess)
	if err := svc.SetCVERelevance(ctx, p.Admin, srv.ID, "", "lcme-deb", true); err != nil {
		t.Fatal(err)
	}
	_, v = run(actions.ContainerParams{Op: actions.ContainerRefresh}, domain.JobSuccess)
	var deb, mini *containers.ImagePackages
	for i, ip := range v.CVEPackages {
		switch ip.Container {
		case "lcme-deb":
			deb = &v.CVEPackages[i]
		case "lcme-app":
			mini = &v.CVEPackages[i]
		}
	}
	if deb == nil || deb.Error != "" || deb.OSID != "debian" || deb.OSVersion != "12" || len(deb.Packages) < 50 {
		t.Fatalf("packages of lcme-deb: %+v", deb)
	}
	if mini == nil || mini.Error == "" || len(mini.Packages) != 0 {
		t.Fatalf("lcme-app (no dpkg in mini) %+v", mini)
	}
	// The SBOM needs the server's own facts and packages (a refresh).
	invSvc := inventory.New(p.Store, inventory.Options{})
	if err := invSvc.Ingest(ctx, srv.ID, facts.Facts{OS: facts.OSRelease{ID: "debian", VersionID: "12", PrettyName: "Debian GNU/Linux 12 (bookworm)"}},
		pkgmgr.Inventory{Manager: "apt", Packages: []pkgmgr.Package{{Name: "bash", Version: "5.2.15-2+b7", Arch: "amd64", Manager: "apt"}}}); err != nil {
		t.Fatal(err)
	}
	bom, err := vulnsvc.New(p.Store, nil, nil, nil).SBOM(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	inCtr, distro := 0, 0
	for _, c := range *bom.Components {
		if c.Properties == nil {
			continue
		}
		for _, pr := range *c.Properties {
			if pr.Name == sbom.ContainerProperty && pr.Value == "podman/lcme-deb" {
				inCtr++
				if strings.Contains(c.PackageURL, "distro=debian-12") {
					distro++
				}
			}
		}
	}
	if inCtr != len(deb.Packages) || distro != inCtr {
		t.Fatalf("SBOM: %d components of podman/lcme-deb (%d with distro debian-12), want %d", inCtr, distro, len(deb.Packages))
	}
	// Unmarked, the container leaves the SBOM.
	if err := svc.SetCVERelevance(ctx, p.Admin, srv.ID, "", "lcme-deb", false); err != nil {
		t.Fatal(err)
	}
	if bom, err = vulnsvc.New(p.Store, nil, nil, nil).SBOM(ctx, p.Admin, srv.ID); err != nil || len(*bom.Components) != 2 {
		t.Fatalf("SBOM after unmarking: %v", err)
	}
}

// debImageSetup builds localhost/debpkgs:1 from mini's files plus the
// host's own /var/lib/dpkg/status and /usr/lib/os-release (a real Debian
// 12 package database) and leaves a stopped container lcme-deb of it.
const debImageSetup = `set -e
r=$(mktemp -d); mkdir -p $r/bin $r/lib/x86_64-linux-gnu $r/lib64 $r/tmp $r/proc $r/dev $r/sys $r/etc $r/var/lib/dpkg $r/usr/lib
cp /bin/sh /bin/true $r/bin/; cp /lib/x86_64-linux-gnu/libc.so.6 $r/lib/x86_64-linux-gnu/; cp /lib64/ld-linux-x86-64.so.2 $r/lib64/
cp /var/lib/dpkg/status $r/var/lib/dpkg/status; cp /usr/lib/os-release $r/usr/lib/os-release; ln -s ../usr/lib/os-release $r/etc/os-release
tar -C $r -c . | podman import - localhost/debpkgs:1 >/dev/null
rm -rf $r
podman run --network none --name lcme-deb localhost/debpkgs:1 /bin/true
`
