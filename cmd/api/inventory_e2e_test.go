package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestInventoryE2E drives the real binary against test host 5 (127.0.0.6,
// the inventory area's host): join, the refresh job, the package inventory
// and hardware it ingested, a package action whose closing refresh updates
// the inventory, the computed traffic light with insights in the server
// list and detail, and a manager outside the server's groups who gets 404
// on every new job route.
func TestInventoryE2E(t *testing.T) {
	h := testutil.TestHostAt(t, 5) // host 5: host 4 belongs to internal/actions
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
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
	resp, body := a.Do("POST", "/api/v1/servers/join", token, map[string]any{
		"name": "e2e-inv-01", "host": h.Host, "port": h.Port, "username": "root", "auth": "key",
		"private_key": string(h.PrivateKey), "host_key": probe.HostKey,
	}, &joined)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, token, joined.JobID, "success")
	id := joined.Server.ID

	type started struct {
		Status  string `json:"status"`
		JobID   string `json:"job_id"`
		JobName string `json:"job_name"`
		Kind    string `json:"kind"`
	}
	runJob := func(path string, req any, wantKind, wantName string) {
		t.Helper()
		var s started
		resp, body := a.Do("POST", "/api/v1/servers/"+id+path, token, req, &s)
		if resp.StatusCode != http.StatusAccepted || s.Status != "started" || s.Kind != wantKind || s.JobName != wantName {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body)
		}
		waitJob(t, a, token, s.JobID, "success")
	}
	packages := func() map[string]bool {
		t.Helper()
		var list []struct {
			Name string `json:"name"`
		}
		if resp, body := a.Do("GET", "/api/v1/servers/"+id+"/packages", token, nil, &list); resp.StatusCode != http.StatusOK {
			t.Fatalf("packages: %d %s", resp.StatusCode, body)
		}
		m := map[string]bool{}
		for _, p := range list {
			m[p.Name] = true
		}
		return m
	}

	// The refresh job: facts and inventory land in the database.
	runJob("/refresh-all", nil, "refresh", "Refresh inventory")
	if pk := packages(); len(pk) < 50 || !pk["dpkg"] || pk["tree"] {
		t.Fatalf("after refresh: %d packages, dpkg %v, tree %v", len(pk), pk["dpkg"], pk["tree"])
	}
	var hw struct {
		Facts struct {
			OS struct {
				ID         string `json:"id"`
				PrettyName string `json:"pretty_name"`
			} `json:"os"`
		} `json:"facts"`
		PackageManager string `json:"package_manager"`
		Packages       int    `json:"packages"`
	}
	if resp, body := a.Do("GET", "/api/v1/servers/"+id+"/hardware", token, nil, &hw); resp.StatusCode != http.StatusOK ||
		hw.Facts.OS.ID != "debian" || hw.Facts.OS.PrettyName == "" || hw.PackageManager != "apt" || hw.Packages < 50 {
		t.Fatalf("hardware: %d %s", resp.StatusCode, body)
	}

	// A package action ends with a refresh. There is no install action, so
	// tree is installed behind LCM's back first: the stored inventory does
	// not know it until the update job's closing refresh.
	ex, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := ex.Run(context.Background(), remote.Command{Cmd: "env DEBIAN_FRONTEND=noninteractive apt-get install -y -q tree",
		Stdout: &out, Stderr: &out, Timeout: 5 * time.Minute})
	ex.Close()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("installing tree on the test host: %d %v\n%s", res.ExitCode, err, out.String())
	}
	if packages()["tree"] {
		t.Fatal("tree in the inventory before any refresh saw it")
	}
	runJob("/packages/update", map[string]any{"names": []string{"tree"}}, "package-action", "Update tree")
	if !packages()["tree"] {
		t.Fatal("tree missing from the inventory after packages/update")
	}
	if resp, body := a.Do("POST", "/api/v1/servers/"+id+"/packages/update", token, map[string]any{"names": []string{}}, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("update without names: %d %s", resp.StatusCode, body)
	}

	// The traffic light is computed by package status, in list and detail.
	type insight struct {
		Level string `json:"level"`
		Code  string `json:"code"`
		Text  string `json:"text"`
	}
	var srv struct {
		Status   string    `json:"status"`
		Insights []insight `json:"insights"`
	}
	a.Do("GET", "/api/v1/servers/"+id, token, nil, &srv)
	switch srv.Status {
	case "green", "yellow", "red":
	default:
		t.Fatalf("status %q, want a computed colour; insights %+v", srv.Status, srv.Insights)
	}
	if len(srv.Insights) == 0 || srv.Insights[0].Text == "" {
		t.Fatalf("no insights: %+v", srv)
	}
	var list []struct {
		ID       string    `json:"id"`
		Status   string    `json:"status"`
		Insights []insight `json:"insights"`
	}
	a.Do("GET", "/api/v1/servers", token, nil, &list)
	if len(list) != 1 || list[0].Status != srv.Status || len(list[0].Insights) != len(srv.Insights) {
		t.Fatalf("list %+v, detail %+v", list, srv)
	}

	// A manager outside the server's groups: 404 on every new job route.
	var mgr struct {
		ID string `json:"id"`
	}
	const mgrPassword = "Vq7#mLz2!pR9wXc4"
	if resp, body := a.Do("POST", "/api/v1/users", token, map[string]any{"username": "mona", "first_name": "Mona",
		"last_name": "Manager", "email": "mona@example.com", "password": mgrPassword, "roles": []string{"manager"}}, &mgr); resp.StatusCode/100 != 2 {
		t.Fatalf("create manager: %d %s", resp.StatusCode, body)
	}
	mtoken := login(t, a, "mona", mgrPassword)
	names := map[string]any{"names": []string{"tree"}}
	for path, req := range map[string]any{
		"/packages/refresh": nil, "/packages/upgrade-all": nil, "/packages/update": names, "/packages/remove": names,
		"/packages/autoremove": nil, "/packages/hold": names, "/packages/unhold": names, "/kernels/cleanup": nil,
		"/refresh-all": nil, "/reboot": nil, "/packages/upgrade-security": nil,
	} {
		if resp, body := a.Do("POST", "/api/v1/servers/"+id+path, mtoken, req, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("manager POST %s on a foreign server: %d %s", path, resp.StatusCode, body)
		}
	}
}
