package main

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

// TestSecurityE2E drives the real binary (all-in-one: the in-process
// scanner answers over the embedded NATS): scanning reports itself
// disabled with the reason until an OSV export is uploaded; after the
// upload the scanner reports the database, and after a restart it loads
// it again from the data directory. No managed server is contacted.
func TestSecurityE2E(t *testing.T) {
	dir := t.TempDir()
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Dir: dir})
	pw := a.AdminPassword
	token := login(t, a, "admin", pw)
	type scannerView struct {
		Enabled   bool   `json:"enabled"`
		Reason    string `json:"reason"`
		Engine    string `json:"engine"`
		Records   int    `json:"records"`
		Freshness string `json:"freshness"`
	}
	var st scannerView
	if resp, body := a.Do("GET", "/api/v1/security/scanner", token, nil, &st); resp.StatusCode != http.StatusOK || st.Enabled ||
		!strings.Contains(st.Reason, "no vulnerability database") {
		t.Fatalf("before upload: %d %s", resp.StatusCode, body)
	}

	zipBytes, err := os.ReadFile(filepath.Join(vulndbtest.Build(t), "Debian", "all.zip"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("ecosystem", "Debian")
	w, _ := mw.CreateFormFile("file", "all.zip")
	w.Write(zipBytes)
	mw.Close()
	req, _ := http.NewRequest("POST", a.BaseURL+"/api/v1/security/scanner/update-db", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.Client.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %v %v", resp, err)
	}
	resp.Body.Close()
	waitEnabled := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			a.Do("GET", "/api/v1/security/scanner", token, nil, &st)
			if st.Enabled || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !st.Enabled || st.Engine != "osv" || st.Records != 5 || st.Freshness == "" {
			t.Fatalf("scanner after upload: %+v", st)
		}
	}
	waitEnabled()
	if _, err := os.Stat(filepath.Join(dir, "data", "vulndb", "Debian", "all.zip")); err != nil {
		t.Fatalf("the scanner did not store the export: %v", err)
	}
	// A fleet scan with no refreshed server scans nothing, successfully.
	if resp, body := a.Do("POST", "/api/v1/security/vulnerabilities/scan", token, nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("fleet scan: %d %s", resp.StatusCode, body)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	a = testutil.StartAPI(t, testutil.APIOptions{Dev: true, Dir: dir})
	token = login(t, a, "admin", pw)
	st = scannerView{}
	waitEnabled()
}
