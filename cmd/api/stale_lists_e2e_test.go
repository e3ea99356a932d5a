package main

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/aptrepo"
)

// TestSecurityUpgradeOnStaleListsE2E is issue 24 section 1 through the
// real binary against Debian test host 10 (127.0.0.11): on a server whose
// package lists are days old and do not know the security suite's newest
// release, POST /packages/refresh and /refresh-all store the security
// updates the host itself reports after its own apt-get update, and POST
// /packages/upgrade-security installs them: afterwards the host's own
// apt-get update + apt-get -s dist-upgrade shows zero pending security
// updates, and so does the stored inventory. The host's apt uses only a
// repository the test serves (aptrepo.StartStaleProbe:
// lcm-stale-probe 1.0 installed from bookworm, 1.1 in bookworm-security),
// so exactly one security update is pending whatever Debian has published
// that day, and no apt command needs the network.
func TestSecurityUpgradeOnStaleListsE2E(t *testing.T) {
	// Host 10, not 7: internal/actions' stale-lists test resets host 7 while
	// this package runs (packages run in parallel); cmd/api's tests run one
	// after another, so they share host 10 with the secrets test.
	testutil.LockTestHostAt(t, 10)
	h := testutil.TestHostAt(t, 10)
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	root, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	onHost := func(cmd string) string {
		t.Helper()
		var out, errb bytes.Buffer
		res, err := root.Run(context.Background(), remote.Command{Cmd: cmd, Stdout: &out, Stderr: &errb, Timeout: 10 * time.Minute})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: exit %d %v\n%s%s", cmd, res.ExitCode, err, out.String(), errb.String())
		}
		return out.String()
	}
	// The host's own answer after its own list refresh.
	hostSecurity := func() []string {
		t.Helper()
		ups, err := pkgmgr.ParseAptSimulate([]byte(onHost("apt-get -q update >/dev/null && LC_ALL=C apt-get -s dist-upgrade")))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, u := range ups {
			if u.Security {
				names = append(names, u.Name)
			}
		}
		slices.Sort(names)
		return names
	}
	// The host's own sources moved aside (the reset brings them back), the
	// test's repository its only one, the probe's old version installed.
	repo := aptrepo.StartStaleProbe(t)
	onHost(repo.OnlySourceScript(aptrepo.StaleProbe + "=" + aptrepo.StaleProbeRelease))
	probeVersion := func() string {
		t.Helper()
		return onHost("dpkg-query -W -f='${Version}' " + aptrepo.StaleProbe)
	}
	// Lists fetched before the security suite's newest release: its
	// index gone, every other list 10 days old.
	const stale = `rm -f /var/lib/apt/lists/*security* /var/cache/apt/pkgcache.bin /var/cache/apt/srcpkgcache.bin
find /var/lib/apt/lists -maxdepth 1 -type f -exec touch -d '10 days ago' {} +`
	if pending := hostSecurity(); !slices.Equal(pending, []string{aptrepo.StaleProbe}) {
		t.Fatalf("test host %d (%s): pending security updates %v, want exactly %s", h.Index, h.Addr, pending, aptrepo.StaleProbe)
	}

	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	token := login(t, a, "admin", a.AdminPassword)
	var probe struct {
		HostKey string `json:"host_key"`
	}
	if resp, body := a.Do("POST", "/api/v1/servers/probe", token, map[string]any{"host": h.Host, "port": h.Port}, &probe); resp.StatusCode != http.StatusOK {
		t.Fatalf("probe: %d %s", resp.StatusCode, body)
	}
	var joined struct {
		JobID  string `json:"job_id"`
		Server struct {
			ID string `json:"id"`
		} `json:"server"`
	}
	if resp, body := a.Do("POST", "/api/v1/servers/join", token, map[string]any{
		"name": "e2e-stale-01", "host": h.Host, "port": h.Port, "username": "root", "auth": "key",
		"private_key": string(h.PrivateKey), "host_key": probe.HostKey,
	}, &joined); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, token, joined.JobID, "success")
	id := joined.Server.ID

	// runJob starts a job, waits for its final state and returns its
	// whole console output.
	runJob := func(path string) string {
		t.Helper()
		var s struct {
			JobID string `json:"job_id"`
		}
		if resp, body := a.Do("POST", "/api/v1/servers/"+id+path, token, nil, &s); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body)
		}
		waitJob(t, a, token, s.JobID, "success")
		var out struct {
			Output   string `json:"output"`
			Complete bool   `json:"complete"`
		}
		testutil.WaitFor(t, 30*time.Second, "complete output of "+path, func() bool {
			a.Do("GET", "/api/v1/jobs/"+s.JobID+"/ssh-output", token, nil, &out)
			return out.Complete
		})
		return out.Output
	}
	storedSecurity := func() []string {
		t.Helper()
		var list []struct {
			Name     string `json:"name"`
			Security bool   `json:"security"`
		}
		if resp, body := a.Do("GET", "/api/v1/servers/"+id+"/outdated-packages", token, nil, &list); resp.StatusCode != http.StatusOK {
			t.Fatalf("outdated-packages: %d %s", resp.StatusCode, body)
		}
		var names []string
		for _, p := range list {
			if p.Security {
				names = append(names, p.Name)
			}
		}
		slices.Sort(names)
		return names
	}
	wantLines := func(path, out string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(out, l) {
				t.Fatalf("%s output lacks %q:\n%s", path, l, out)
			}
		}
	}

	// Both refreshes refresh the lists: the stored security updates are
	// the host's own.
	for _, path := range []string{"/packages/refresh", "/refresh-all"} {
		onHost(stale)
		out := runJob(path)
		wantLines(path, out, "lcm: package lists are 10d 0h old", "lcm: refreshing every configured apt source (apt-get update)",
			"bookworm-security InRelease", "lcm: package lists refreshed in ")
		stored := storedSecurity()
		if host := hostSecurity(); len(stored) == 0 || !slices.Equal(stored, host) {
			t.Fatalf("after %s the inventory stores security updates %v, the host reports %v\n%s", path, stored, host, out)
		}
	}

	// The security upgrade on stale lists leaves nothing pending.
	if v := probeVersion(); v != aptrepo.StaleProbeRelease {
		t.Fatalf("%s %s installed before the upgrade", aptrepo.StaleProbe, v)
	}
	onHost(stale)
	out := runJob("/packages/upgrade-security")
	wantLines("upgrade-security", out, "lcm: package lists are 10d 0h old", "lcm: refreshing every configured apt source (apt-get update)",
		"lcm: security updates: ")
	if strings.Contains(out, "no security updates") {
		t.Fatalf("upgrade-security on stale lists found nothing:\n%s", out)
	}
	if left := hostSecurity(); len(left) != 0 {
		t.Fatalf("after upgrade-security the host's own apt-get update + simulation shows security updates: %v\n%s", left, out)
	}
	if v := probeVersion(); v != aptrepo.StaleProbeSecurity {
		t.Fatalf("after upgrade-security %s %s is installed, want %s\n%s", aptrepo.StaleProbe, v, aptrepo.StaleProbeSecurity, out)
	}
	if left := storedSecurity(); len(left) != 0 {
		t.Fatalf("after upgrade-security the inventory stores security updates %v", left)
	}
}
