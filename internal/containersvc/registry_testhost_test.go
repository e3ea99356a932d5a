package containersvc

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/registrysvc"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// composeSetup (after hostSetup) adds podman-compose from Debian, makes
// the local registry REG (plain HTTP on 127.0.0.1: the test hosts share
// this machine's network namespace) an insecure registry for podman,
// pushes localhost/mini:1 as REG/lcm/app:v1, prepares a second image
// (localhost/mini:2, one file more) and starts the compose project
// lcme-shop whose service web runs REG/lcm/app:v1 (pulled by compose).
//
// The service uses network_mode: none, as a bridge network would change
// this machine's own network namespace. podman-compose 1.0.3 adds
// "--net <project>_default --network-alias <service>" to every podman
// run even then, which podman refuses; a shim in /usr/local/bin (first
// in sudo's secure_path, gone with the host's reset) drops those two
// options when --network none is given and runs the real podman with the
// rest. Everything else — pulls from the registry, the containers'
// images and digests — is podman's own.
const composeSetup = `set -e
command -v podman-compose >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman-compose >>/tmp/lcm-apt.log 2>&1
cat >/usr/local/bin/podman <<'SHIM'
#!/bin/sh
case " $* " in *" --network none "*) ;; *) exec /usr/bin/podman "$@" ;; esac
skip=0; first=1
for a do
  if [ $first = 1 ]; then set --; first=0; fi
  if [ $skip = 1 ]; then skip=0; continue; fi
  case $a in --net|--network-alias) skip=1; continue ;; esac
  set -- "$@" "$a"
done
exec /usr/bin/podman "$@"
SHIM
chmod 755 /usr/local/bin/podman
mkdir -p /etc/containers/registries.conf.d
printf '[[registry]]\nlocation = "REG"\ninsecure = true\n' >/etc/containers/registries.conf.d/lcm-e2e.conf
podman push -q localhost/mini:1 REG/lcm/app:v1
podman run --network none --name lcme-v2src localhost/mini:1 /bin/sh -c 'echo 2 >/tmp/v2'
podman commit -q lcme-v2src localhost/mini:2 >/dev/null
podman rm lcme-v2src >/dev/null
mkdir -p /srv/lcme-shop
cat >/srv/lcme-shop/docker-compose.yml <<'EOF'
services:
  web:
    image: REG/lcm/app:v1
    network_mode: none
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"]
EOF
cd /srv/lcme-shop
podman-compose up -d >/tmp/lcme-compose.log 2>&1 || true
podman ps -q --filter label=com.docker.compose.project=lcme-shop --filter status=running | grep -q . || { cat /tmp/lcme-compose.log; podman ps -a; exit 1; }
`

// TestRegistryUpdateOnTestHost is the newer-image check end to end on
// test host 14 with a real registry (Debian's docker-registry) and a
// real compose project (podman-compose): a regular refresh job reads the
// project and the check says up to date; a different image is pushed
// under the same tag and the check says newer; LCM's compose update job
// moves the container to the registry's new digest, read back, and the
// check says up to date again.
func TestRegistryUpdateOnTestHost(t *testing.T) {
	h := testutil.TestHostAt(t, 14)
	reg := testutil.StartRegistry(t, testutil.RegistryOptions{})
	ctx := context.Background()
	p := plane.Start(t, plane.Options{})
	testutil.LockTestHost(t, h)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	root, err := sshexec.Dial(ctx, sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	sh := func(what, script string) {
		t.Helper()
		var out bytes.Buffer
		res, err := root.Run(ctx, remote.Command{Cmd: script, Stdout: &out, Stderr: &out, Timeout: 10 * time.Minute})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s on test host 14: %v exit %d\n%s", what, err, res.ExitCode, out.String())
		}
	}
	sh("podman", hostSetup)
	sh("compose project", strings.ReplaceAll(composeSetup, "REG", reg.Host))
	v1 := reg.Digest(t, "lcm/app", "v1", "")

	srv, err := p.Store.CreateServer(ctx, store.NewServer{
		Server: domain.Server{Name: "ctr-host-14", Host: h.Host, Port: h.Port, Transport: domain.TransportSSH, Status: domain.ServerGreen,
			Joined: true, AuthMethod: domain.AuthKey, HostKey: h.HostKeys[0], PackageFamily: "apt"},
		Secrets: store.ServerSecrets{Username: "root", PrivateKey: string(h.PrivateKey)},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Wired as cmd/api wires it: the registry service (the local registry
	// stored as plain HTTP) behind the checker, the refresh ingest handing
	// the container inventory to the service. The digest cache is off: it
	// would hide the push below for ten minutes.
	regs := registrysvc.New(p.Store, registrysvc.Options{CacheTTL: time.Nanosecond})
	plain := true
	if _, err := regs.Create(ctx, registrysvc.Input{Host: &reg.Host, PlainHTTP: &plain}); err != nil {
		t.Fatal(err)
	}
	svc := New(p.Store, p.Jobs, nil)
	svc.RegisterJobs()
	svc.SetUpdateChecker(RegistryChecker(regs))
	inv := inventory.New(p.Store, inventory.Options{})
	inv.OnContainers(svc.IngestRefreshes)
	p.Jobs.OnFinishBatch(domain.JobRefresh, inv.IngestJobs)

	// wait waits for a job and for the inventory it stored.
	wait := func(j domain.Job, want domain.JobStatus) ServerView {
		t.Helper()
		done := p.WaitJob(t, j.ID, 10*time.Minute)
		if done.Status != want {
			o, _ := p.Jobs.Output(ctx, p.Admin, j.ID, 0)
			t.Fatalf("job %s %s (%s), want %s\n%s", j.Kind, done.Status, done.Error, want, o.Output)
		}
		var v ServerView
		testutil.WaitFor(t, 30*time.Second, "inventory of job "+j.ID, func() bool {
			v, err = svc.Server(ctx, p.Admin, srv.ID)
			return err == nil && v.JobID == j.ID && v.UpdatesCheckedAt != nil
		})
		return v
	}
	web := func(v ServerView) containers.Container {
		t.Helper()
		for _, c := range v.Containers {
			if c.ComposeProject == "lcme-shop" && c.ComposeService == "web" {
				return c
			}
		}
		t.Fatalf("no container of lcme-shop/web in %+v", v.Containers)
		return containers.Container{}
	}
	project := func(v ServerView) containers.ComposeProject {
		t.Helper()
		for _, pr := range v.Compose {
			if pr.Name == "lcme-shop" {
				return pr
			}
		}
		t.Fatalf("no project lcme-shop in %+v", v.Compose)
		return containers.ComposeProject{}
	}

	// The regular refresh job fills the container inventory, and the
	// check it runs finds the image current.
	j, err := p.Jobs.SubmitServer(ctx, p.Admin, srv, domain.JobRefresh, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := wait(j, domain.JobSuccess)
	c := web(v)
	if c.State != "running" || !knownAs(v, c, v1) || c.Update != containers.UpdateUpToDate || project(v).Update != containers.UpdateUpToDate {
		t.Fatalf("after the refresh (registry digest %s): %+v, project %+v", v1, c, project(v))
	}
	if pr := project(v); pr.WorkingDir != "/srv/lcme-shop" || len(pr.ConfigFiles) != 1 {
		t.Fatalf("project %+v", pr)
	}
	if len(v.Engines) != 1 || !containsString(v.Engines[0].ComposeTools, "podman-compose") {
		t.Fatalf("engines %+v", v.Engines)
	}

	// A new image under the same tag: the check says newer.
	sh("push v2", "podman push -q localhost/mini:2 "+reg.Host+"/lcm/app:v1")
	v2 := reg.Digest(t, "lcm/app", "v1", "")
	if v2 == v1 {
		t.Fatalf("the push did not change the digest (%s)", v1)
	}
	if err := svc.CheckUpdates(ctx, p.Admin, srv.ID); err != nil {
		t.Fatal(err)
	}
	if v, err = svc.Server(ctx, p.Admin, srv.ID); err != nil {
		t.Fatal(err)
	}
	if c := web(v); c.Update != containers.UpdateAvailable || project(v).Update != containers.UpdateAvailable {
		t.Fatalf("after the push: container %s, project %s", c.Update, project(v).Update)
	}

	// The compose update moves the container to the new digest.
	j, err = svc.Submit(ctx, p.Admin, srv.ID, actions.ContainerParams{Op: actions.ContainerComposeUpdate, Project: "lcme-shop"})
	if err != nil {
		t.Fatal(err)
	}
	v = wait(j, domain.JobSuccess)
	before := c
	c = web(v)
	if c.State != "running" || c.ImageID == before.ImageID || !knownAs(v, c, v2) || c.Update != containers.UpdateUpToDate || project(v).Update != containers.UpdateUpToDate {
		t.Fatalf("after the compose update (registry digest %s): %+v, project %+v", v2, c, project(v))
	}
	if o := v.LastAction; o == nil || !o.OK || o.After[c.Name] != c.ImageDigest || o.Before[c.Name] != before.ImageDigest || o.After[c.Name] == o.Before[c.Name] {
		t.Fatalf("compose update outcome %+v", v.LastAction)
	}

	// Restart: the container runs again, started later than before.
	sh("let the clock move past the start second", "sleep 1.1")
	j, err = svc.Submit(ctx, p.Admin, srv.ID, actions.ContainerParams{Op: actions.ContainerRestart, Container: c.Name})
	if err != nil {
		t.Fatal(err)
	}
	v = wait(j, domain.JobSuccess)
	restarted := web(v)
	if restarted.State != "running" || restarted.StartedAt == nil || c.StartedAt == nil || !restarted.StartedAt.After(*c.StartedAt) ||
		v.LastAction == nil || !v.LastAction.OK || v.LastAction.Op != actions.ContainerRestart {
		t.Fatalf("after the restart: %+v (before %v), outcome %+v", restarted, c.StartedAt, v.LastAction)
	}

	// Pull one image: the tag moves in the registry (the first image again),
	// the pull reads the new digest back.
	sh("push v1 again", "podman push -q localhost/mini:1 "+reg.Host+"/lcm/app:v1")
	v3 := reg.Digest(t, "lcm/app", "v1", "")
	if v3 == v2 {
		t.Fatalf("the push did not change the digest (%s)", v2)
	}
	j, err = svc.Submit(ctx, p.Admin, srv.ID, actions.ContainerParams{Op: actions.ContainerPull, Image: c.Image})
	if err != nil {
		t.Fatal(err)
	}
	v = wait(j, domain.JobSuccess)
	o := v.LastAction
	if o == nil || !o.OK || o.Op != actions.ContainerPull || o.Before[c.Image] == "" || o.After[c.Image] == o.Before[c.Image] || !imageKnownAs(v, c.Image, v3) {
		t.Fatalf("pull %s (registry digest %s): outcome %+v, images %+v", c.Image, v3, o, v.Images)
	}

	// Pull all images in use: the tag moves again; the image the compose
	// container uses is pulled and read back with the registry's new
	// digest. The host's other container runs localhost/mini:1, an image
	// built on the host that no registry serves: its pull fails, and the
	// job says so (failed, naming it) while keeping what it did pull.
	sh("push v2 again", "podman push -q localhost/mini:2 "+reg.Host+"/lcm/app:v1")
	v4 := reg.Digest(t, "lcm/app", "v1", "")
	j, err = svc.Submit(ctx, p.Admin, srv.ID, actions.ContainerParams{Op: actions.ContainerPullAll})
	if err != nil {
		t.Fatal(err)
	}
	v = wait(j, domain.JobFailed)
	o = v.LastAction
	key := "podman " + c.Image
	local := "podman localhost/mini:1"
	if o == nil || o.OK || o.Op != actions.ContainerPullAll || o.Before[key] == "" || o.After[key] == o.Before[key] ||
		o.After[local] != o.Before[local] || !strings.Contains(o.Message, "1 with a new digest") || !imageKnownAs(v, c.Image, v4) {
		t.Fatalf("pull-all (registry digest %s): outcome %+v, images %+v", v4, o, v.Images)
	}
	if done := p.WaitJob(t, j.ID, time.Minute); !strings.Contains(done.Error, "pull failed for localhost/mini:1") {
		t.Fatalf("pull-all job error %q, want it to name the image that could not be pulled", done.Error)
	}
}

// imageKnownAs reports whether the image tagged ref is known by the
// registry digest d (its own digest or among its repo digests).
func imageKnownAs(v ServerView, ref, d string) bool {
	for _, im := range v.Images {
		if im.Repository+":"+im.Tag == ref && (im.Digest == d || containsString(im.Digests, d)) {
			return true
		}
	}
	return false
}

// knownAs reports whether the image container c runs is known by the
// registry digest d. podman keeps the manifest it built or imported an
// image with as the image's digest (what inspect shows as the container's
// ImageDigest) and lists the registry's among its RepoDigests when the
// same image is pulled: these images were pushed from the host itself.
func knownAs(v ServerView, c containers.Container, d string) bool {
	if c.ImageDigest == d {
		return true
	}
	for _, im := range v.Images {
		if im.ID == c.ImageID && containsString(im.Digests, d) {
			return true
		}
	}
	return false
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
