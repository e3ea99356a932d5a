package containersvc

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// composeV1Setup (after hostSetup) installs Debian's docker-compose 1.29
// and serves Podman's Docker-compatible API on /run/docker.sock (the
// socket docker-compose uses by default; a test host has no systemd, so
// `podman system service` runs in the background until the host's reset),
// pushes localhost/mini:1 as REG/lcm/v1app:v1 and starts the compose
// project lcme-v1 with docker-compose. network_mode: none keeps the
// machine's network namespace untouched; docker-compose, unlike
// podman-compose 1.0.3, needs no shim for it.
const composeV1Setup = `set -e
command -v docker-compose >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker-compose >>/tmp/lcm-apt.log 2>&1
mkdir -p /etc/containers/registries.conf.d
printf '[[registry]]\nlocation = "REG"\ninsecure = true\n' >/etc/containers/registries.conf.d/lcm-e2e.conf
# The service reads registries.conf when it starts: after the line above.
[ -f /run/lcm-podman-service.pid ] && kill "$(cat /run/lcm-podman-service.pid)" 2>/dev/null || true
rm -f /run/docker.sock
nohup podman system service --time=0 unix:///run/docker.sock >/tmp/lcm-podman-service.log 2>&1 </dev/null &
echo $! >/run/lcm-podman-service.pid
for i in $(seq 1 100); do [ -S /run/docker.sock ] && break; sleep 0.1; done
podman push -q localhost/mini:1 REG/lcm/v1app:v1
podman run --network none --name lcme-v2src localhost/mini:1 /bin/sh -c 'echo 2 >/tmp/v2'
podman commit -q lcme-v2src localhost/mini:2 >/dev/null
podman rm lcme-v2src >/dev/null
mkdir -p /srv/lcme-v1
cat >/srv/lcme-v1/docker-compose.yml <<'EOF'
services:
  web:
    image: REG/lcm/v1app:v1
    network_mode: none
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"]
EOF
cd /srv/lcme-v1
docker-compose -p lcme-v1 up -d
`

// TestComposeV1OnTestHost: LCM's compose update with docker-compose v1
// (Debian's 1.29.2) against Podman's Docker-compatible API on test host
// 14: after a new image is pushed under the project's tag, the update
// (tool docker-compose: pull, then up -d, which recreates a changed
// container itself) moves the container to the new digest, read back.
func TestComposeV1OnTestHost(t *testing.T) {
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
	sh("docker-compose project", strings.ReplaceAll(composeV1Setup, "REG", reg.Host))

	srv, err := p.Store.CreateServer(ctx, store.NewServer{
		Server: domain.Server{Name: "ctr-host-14-v1", Host: h.Host, Port: h.Port, Transport: domain.TransportSSH, Status: domain.ServerGreen,
			Joined: true, AuthMethod: domain.AuthKey, HostKey: h.HostKeys[0], PackageFamily: "apt"},
		Secrets: store.ServerSecrets{Username: "root", PrivateKey: string(h.PrivateKey)},
	})
	if err != nil {
		t.Fatal(err)
	}
	svc := New(p.Store, p.Jobs, nil)
	svc.RegisterJobs()
	inv := inventory.New(p.Store, inventory.Options{})
	inv.OnContainers(svc.IngestRefreshes)
	wait := func(j domain.Job) ServerView {
		t.Helper()
		done := p.WaitJob(t, j.ID, 10*time.Minute)
		if done.Status != domain.JobSuccess {
			o, _ := p.Jobs.Output(ctx, p.Admin, j.ID, 0)
			t.Fatalf("job %s %s (%s)\n%s", j.Kind, done.Status, done.Error, o.Output)
		}
		var v ServerView
		testutil.WaitFor(t, 30*time.Second, "inventory of job "+j.ID, func() bool {
			v, err = svc.Server(ctx, p.Admin, srv.ID)
			return err == nil && v.JobID == j.ID
		})
		return v
	}
	j, err := svc.Submit(ctx, p.Admin, srv.ID, actions.ContainerParams{Op: actions.ContainerRefresh})
	if err != nil {
		t.Fatal(err)
	}
	v := wait(j)
	var before *ServerView
	name := ""
	for _, c := range v.Containers {
		if c.ComposeProject == "lcme-v1" && c.ComposeService == "web" && c.State == "running" {
			name, before = c.Name, &v
		}
	}
	if before == nil {
		t.Fatalf("no running container of lcme-v1/web: %+v", v.Containers)
	}

	sh("push v2", "podman push -q localhost/mini:2 "+reg.Host+"/lcm/v1app:v1")
	v2 := reg.Digest(t, "lcm/v1app", "v1", "")
	j, err = svc.Submit(ctx, p.Admin, srv.ID, actions.ContainerParams{Op: actions.ContainerComposeUpdate, Project: "lcme-v1", Tool: "docker-compose"})
	if err != nil {
		t.Fatal(err)
	}
	v = wait(j)
	o := v.LastAction
	if o == nil || !o.OK || o.Before[name] == "" || o.After[name] == o.Before[name] {
		t.Fatalf("docker-compose update outcome %+v", o)
	}
	for _, c := range v.Containers {
		if c.Name == name {
			if c.State != "running" || !knownAs(v, c, v2) {
				t.Fatalf("after the update (registry digest %s): %+v", v2, c)
			}
			out, _ := p.Jobs.Output(ctx, p.Admin, j.ID, 0)
			if !strings.Contains(string(out.Output), "docker-compose -p 'lcme-v1'") {
				t.Fatalf("the update did not run docker-compose:\n%s", out.Output)
			}
			return
		}
	}
	t.Fatalf("container %s gone after the update: %+v", name, v.Containers)
}
