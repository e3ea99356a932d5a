package main

import (
	"archive/zip"
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

// rescanHost is the test host of the rescan e2e (docs/testing.md).
const rescanHost = 18

// treeAdvisory is a record in the shape of Debian's DEBIAN-CVE records,
// for the "tree" source package on Debian 12, rated "high" by its urgency
// and unfixed. Its id marks it as LCM's own: it stands for whatever real
// advisory a package change brings in.
const treeAdvisory = `{
  "id": "LCM-SHAPE-DEBIAN-CVE-TREE",
  "modified": "2026-11-20T00:00:00Z",
  "upstream": ["CVE-2099-0001"],
  "details": "A record in the shape of a DEBIAN-CVE record, for the rescan test.",
  "affected": [{"package": {"name": "tree", "ecosystem": "Debian:12", "purl": "pkg:deb/debian/tree?arch=source"},
    "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}],
    "ecosystem_specific": {"urgency": "high"}}]
}`

// TestRescanAfterPackageChangeE2E: the real binary rescans a real test host
// after each job that can change packages — no manual scan is ever asked
// for. A refresh brings the findings of the host's packages (Debian's
// transcribed records); tree, installed behind LCM's back and then updated
// through a package action, turns the server yellow through the rescan
// that follows the action's closing refresh, with an insight naming it; a
// container refresh is followed by a rescan as well.
func TestRescanAfterPackageChangeE2E(t *testing.T) {
	h := testutil.TestHostAt(t, rescanHost)
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	token := login(t, a, "admin", a.AdminPassword)

	// The Debian export: the shipped records plus the tree record.
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	files, _ := filepath.Glob(filepath.Join(vulndbtest.FixtureDir(), "Debian", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := zw.Create(filepath.Base(p))
		w.Write(b)
	}
	w, _ := zw.Create("LCM-SHAPE-DEBIAN-CVE-TREE.json")
	w.Write([]byte(treeAdvisory))
	zw.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("ecosystem", "Debian")
	fw, _ := mw.CreateFormFile("file", "all.zip")
	fw.Write(zbuf.Bytes())
	mw.Close()
	req, _ := http.NewRequest("POST", a.BaseURL+"/api/v1/security/scanner/update-db", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.Client.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %v %v", resp, err)
	}
	resp.Body.Close()
	testutil.WaitFor(t, 20*time.Second, "the scanner loads the upload", func() bool {
		var st struct {
			Enabled bool `json:"enabled"`
			Records int  `json:"records"`
		}
		a.Do("GET", "/api/v1/security/scanner", token, nil, &st)
		return st.Enabled && st.Records == len(files)+1
	})

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
		"name": "e2e-rescan-01", "host": h.Host, "port": h.Port, "username": "root", "auth": "key",
		"private_key": string(h.PrivateKey), "host_key": probe.HostKey,
	}, &joined); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, token, joined.JobID, "success")
	id := joined.Server.ID
	runJob := func(path string, req any) {
		t.Helper()
		var s struct {
			JobID string `json:"job_id"`
		}
		if resp, body := a.Do("POST", "/api/v1/servers/"+id+path, token, req, &s); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body)
		}
		waitJob(t, a, token, s.JobID, "success")
	}
	type finding struct {
		Advisory   string    `json:"advisory"`
		Package    string    `json:"package"`
		Severity   string    `json:"severity"`
		LastSeenAt time.Time `json:"last_seen_at"`
	}
	findings := func() map[string]finding {
		var page struct {
			Items []finding `json:"items"`
		}
		a.Do("GET", "/api/v1/servers/"+id+"/vulnerabilities", token, nil, &page)
		out := map[string]finding{}
		for _, f := range page.Items {
			out[f.Advisory+"/"+f.Package] = f
		}
		return out
	}
	server := func() (string, []rescanInsight) {
		var srv struct {
			Status   string          `json:"status"`
			Insights []rescanInsight `json:"insights"`
		}
		a.Do("GET", "/api/v1/servers/"+id, token, nil, &srv)
		return srv.Status, srv.Insights
	}

	// A refresh: the rescan after it stores the unfixed DEBIAN-CVE findings
	// of the host's openssh and glibc; the DSAs are fixed on it.
	runJob("/refresh-all", nil)
	testutil.WaitFor(t, 60*time.Second, "findings after the refresh's rescan", func() bool {
		fs := findings()
		_, ssh := fs["DEBIAN-CVE-2023-51767/openssh-server"]
		_, dsa := fs["DSA-5724-1/openssh-server"]
		return ssh && !dsa
	})
	if _, ok := findings()["LCM-SHAPE-DEBIAN-CVE-TREE/tree"]; ok {
		t.Fatal("tree finding before tree is installed")
	}
	if status, ins := server(); status == "red" || hasInsight(ins, "cve_high") {
		t.Fatalf("before tree: %s %+v", status, ins)
	}

	// tree is installed behind LCM's back; updating it through LCM is a
	// package action whose closing refresh reads it, and the rescan after
	// the action finds the record: high, so the server turns yellow.
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
	runJob("/packages/update", map[string]any{"names": []string{"tree"}})
	testutil.WaitFor(t, 60*time.Second, "the tree finding after the package action's rescan", func() bool {
		f, ok := findings()["LCM-SHAPE-DEBIAN-CVE-TREE/tree"]
		return ok && f.Severity == "high"
	})
	testutil.WaitFor(t, 30*time.Second, "the traffic light turns yellow naming tree", func() bool {
		status, ins := server()
		return status == "yellow" && hasInsight(ins, "cve_high") && insightMentions(ins, "cve_high", "tree")
	})

	// A container refresh (the host has no engine: it reads nothing) is
	// followed by a rescan too: the findings are seen again later.
	seen := findings()["LCM-SHAPE-DEBIAN-CVE-TREE/tree"].LastSeenAt
	runJob("/docker/refresh", nil)
	testutil.WaitFor(t, 60*time.Second, "a rescan after the container refresh", func() bool {
		return findings()["LCM-SHAPE-DEBIAN-CVE-TREE/tree"].LastSeenAt.After(seen)
	})
}

type rescanInsight struct {
	Code string `json:"code"`
	Text string `json:"text"`
}

func hasInsight(ins []rescanInsight, code string) bool {
	for _, i := range ins {
		if i.Code == code {
			return true
		}
	}
	return false
}

func insightMentions(ins []rescanInsight, code, word string) bool {
	for _, i := range ins {
		if i.Code == code && strings.Contains(i.Text, word) {
			return true
		}
	}
	return false
}
