package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestSecurityRoutes: scans, findings with filters, acknowledgement, the
// SBOM download and the scanner status over HTTP, with group scoping (a
// manager sees only the servers of the groups they manage) and 4xx for
// bad input.
func TestSecurityRoutes(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			h, admin, mgr, mine, other := inventoryHarness(t, db.URL)
			vulns := startVulns(t, h.st, h.bus)
			h.srv = New(Deps{Store: h.st, Bus: h.bus, Dev: true, Log: quietLog,
				ClientAddr: func(r *http.Request) netip.Addr {
					return h.svc.ClientAddr(r.Context(), r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
				},
				Allowed:  func(ip netip.Addr) bool { return h.svc.Allowed(context.Background(), ip) },
				Services: Services{Auth: h.svc, Inventory: inventory.New(h.st, inventory.Options{Log: quietLog}), Vulns: vulns}})
			for _, id := range []string{mine, other} {
				ingestOldBookworm(t, h.st, id)
			}
			get := func(tok, path string) resp { return h.do(req{method: http.MethodGet, path: path, token: tok}) }
			post := func(tok, path string) resp { return h.do(req{method: http.MethodPost, path: path, token: tok}) }

			if r := post(mgr, "/api/v1/servers/"+other+"/vulnerabilities/scan"); r.code != http.StatusNotFound {
				t.Fatalf("manager scans a foreign server: %d %s", r.code, r.body)
			}
			for _, id := range []string{mine, other} {
				if r := post(admin, "/api/v1/servers/"+id+"/vulnerabilities/scan"); r.code != http.StatusOK || !strings.Contains(string(r.body), `"findings":2`) {
					t.Fatalf("scan: %d %s", r.code, r.body)
				}
			}
			var page vulnPageDTO
			r := get(mgr, "/api/v1/security/vulnerabilities")
			r.json(t, &page)
			if page.Total != 2 || page.Items[0].ServerID != mine || page.Items[0].Advisory != "DSA-5724-1" || page.Items[0].ServerName != "inv-mine" {
				t.Fatalf("manager's fleet view: %s", r.body)
			}
			get(admin, "/api/v1/security/vulnerabilities?severity=high&fix_available=true").json(t, &page)
			if page.Total != 2 {
				t.Fatalf("admin, high with fix: %+v", page)
			}
			get(admin, "/api/v1/security/vulnerabilities?cve=CVE-2023-51767").json(t, &page)
			if page.Total != 2 || page.Items[0].Advisory != "DEBIAN-CVE-2023-51767" {
				t.Fatalf("by CVE: %+v", page)
			}
			var pkgs []vulnerablePackageDTO
			get(mgr, "/api/v1/packages/vulnerable").json(t, &pkgs)
			if len(pkgs) != 2 || pkgs[0].Servers != 1 || pkgs[0].Package != "openssh-server" {
				t.Fatalf("manager's vulnerable packages: %+v", pkgs)
			}
			// Acknowledge: the manager only within their groups.
			get(admin, "/api/v1/servers/"+other+"/vulnerabilities").json(t, &page)
			foreign := page.Items[0].ID
			if r := post(mgr, "/api/v1/security/vulnerabilities/"+strconv.FormatUint(foreign, 10)+"/acknowledge"); r.code != http.StatusNotFound {
				t.Fatalf("manager acknowledges a foreign finding: %d", r.code)
			}
			get(mgr, "/api/v1/servers/"+mine+"/vulnerabilities").json(t, &page)
			var ack vulnDTO
			r = post(mgr, "/api/v1/security/vulnerabilities/"+strconv.FormatUint(page.Items[0].ID, 10)+"/acknowledge")
			r.json(t, &ack)
			if r.code != http.StatusOK || ack.State != "acknowledged" || ack.AcknowledgedBy != "invmgr" {
				t.Fatalf("ack: %d %s", r.code, r.body)
			}
			get(mgr, "/api/v1/servers/"+mine+"/vulnerabilities?state=acknowledged").json(t, &page)
			if page.Total != 1 {
				t.Fatalf("acknowledged filter: %+v", page)
			}
			// SBOM download.
			r = get(mgr, "/api/v1/servers/"+mine+"/sbom")
			if r.code != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/vnd.cyclonedx+json") ||
				!strings.Contains(r.header.Get("Content-Disposition"), "inv-mine.cdx.json") {
				t.Fatalf("sbom: %d %v", r.code, r.header)
			}
			bom, err := sbom.Decode(strings.NewReader(string(r.body)))
			if err != nil || len(sbom.Components(bom)) != 1 {
				t.Fatalf("sbom body: %v", err)
			}
			if r := get(mgr, "/api/v1/servers/"+other+"/sbom"); r.code != http.StatusNotFound {
				t.Fatalf("foreign sbom: %d", r.code)
			}
			// Group SBOM: the manager's group holds one server.
			groups, err := h.st.ListGroups(context.Background(), store.SystemScope)
			if err != nil || len(groups) != 1 {
				t.Fatalf("groups %+v %v", groups, err)
			}
			r = get(mgr, "/api/v1/server-groups/"+groups[0].ID+"/sbom")
			if r.code != http.StatusOK || !strings.Contains(r.header.Get("Content-Disposition"), "inv-group.cdx.json") ||
				!strings.Contains(string(r.body), `"name": "inv-mine"`) || strings.Contains(string(r.body), "inv-other") {
				t.Fatalf("group sbom: %d %s", r.code, r.body)
			}
			if r := get(mgr, "/api/v1/server-groups/nope/sbom"); r.code != http.StatusNotFound {
				t.Fatalf("unknown group sbom: %d", r.code)
			}
			// A CVE-relevant container on mine with bookworm's old openssh:
			// its findings name the container and stay apart from the host's.
			inv, _ := json.Marshal(containers.Inventory{CVEPackages: []containers.ImagePackages{{Engine: "docker", Container: "web",
				OSID: "debian", OSVersion: "12", Packages: []containers.Package{{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh"}}}}})
			ctx := context.Background()
			if err := h.st.SetContainerInventory(ctx, store.ContainerInventory{ServerID: mine, Data: inv, RefreshedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if err := h.st.SetContainerCVERelevance(ctx, store.ContainerCVEMark{ServerID: mine, Engine: "docker", Container: "web", MarkedAt: time.Now()}, true); err != nil {
				t.Fatal(err)
			}
			if r := post(mgr, "/api/v1/servers/"+mine+"/vulnerabilities/scan"); r.code != http.StatusOK || !strings.Contains(string(r.body), `"findings":4`) {
				t.Fatalf("scan with a container: %d %s", r.code, r.body)
			}
			r = get(mgr, "/api/v1/servers/"+mine+"/vulnerabilities?cve=CVE-2024-6387")
			r.json(t, &page)
			if page.Total != 2 || page.Items[0].Container != "" || page.Items[1].Container != "docker/web" || page.Items[1].Package != "openssh-server" ||
				strings.Count(string(r.body), `"container":`) != 1 {
				t.Fatalf("host and container finding: %s", r.body)
			}
			get(mgr, "/api/v1/packages/vulnerable").json(t, &pkgs)
			inCtr := 0
			for _, p := range pkgs {
				if p.Container == "docker/web" {
					inCtr++
				}
			}
			if len(pkgs) != 4 || inCtr != 2 {
				t.Fatalf("vulnerable packages with a container: %+v", pkgs)
			}
			// Scanner status.
			var st struct {
				Enabled   bool   `json:"enabled"`
				Records   int    `json:"records"`
				Freshness string `json:"freshness"`
			}
			get(mgr, "/api/v1/security/scanner").json(t, &st)
			if !st.Enabled || st.Records != 6 || st.Freshness != "critical" {
				t.Fatalf("scanner: %+v", st)
			}
			// Client errors.
			for _, tc := range []struct {
				method, path, tok string
				code              int
			}{
				{http.MethodGet, "/api/v1/security/vulnerabilities?severity=extreme", admin, 400},
				{http.MethodGet, "/api/v1/security/vulnerabilities?fix_available=maybe", admin, 400},
				{http.MethodGet, "/api/v1/security/vulnerabilities?state=gone", admin, 400},
				{http.MethodGet, "/api/v1/packages/vulnerable?limit=-1", admin, 400},
				{http.MethodPost, "/api/v1/security/vulnerabilities/abc/acknowledge", admin, 404},
				{http.MethodPost, "/api/v1/security/vulnerabilities/99999/acknowledge", admin, 404},
				{http.MethodPost, "/api/v1/security/scanner/update-db", admin, 400},
				{http.MethodPost, "/api/v1/security/scanner/update-db", mgr, 403},
				{http.MethodGet, "/api/v1/servers/nope/vulnerabilities", admin, 404},
			} {
				r := h.do(req{method: tc.method, path: tc.path, token: tc.tok})
				if r.code != tc.code || !strings.Contains(string(r.body), `"code"`) {
					t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.code, r.body, tc.code)
				}
			}
			body, ctype := osvUpload(t, "Debian")
			r = h.do(req{method: http.MethodPost, path: "/api/v1/security/scanner/update-db", token: admin, body: body, headers: map[string]string{"Content-Type": ctype}})
			if r.code != http.StatusOK || !strings.Contains(string(r.body), `"records":5`) {
				t.Fatalf("upload: %d %s", r.code, r.body)
			}
			body = []byte(strings.Replace(string(body), "name=\"ecosystem\"\r\n\r\nDebian", "name=\"ecosystem\"\r\n\r\nGentoo", 1))
			r = h.do(req{method: http.MethodPost, path: "/api/v1/security/scanner/update-db", token: admin, body: body, headers: map[string]string{"Content-Type": ctype}})
			if r.code != http.StatusBadRequest {
				t.Fatalf("unknown ecosystem: %d %s", r.code, r.body)
			}
		})
	}
}
