package httpapi

import (
	"bytes"
	"context"
	"mime/multipart"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

// startVulns runs a scanner over the real fixture records on b and
// returns the vulnerability service for the routes.
func startVulns(t *testing.T, st *store.Store, b *bus.Bus, up ...vulnsvc.Upgrader) *vulnsvc.Service {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sc := scanner.New(vulndbtest.Build(t), "test", quietLog)
	done := make(chan struct{})
	go func() { defer close(done); _ = sc.Serve(ctx, b, 2) }()
	t.Cleanup(func() { cancel(); <-done })
	cl := &scanner.Client{Bus: b}
	for i := 0; i < 100; i++ {
		if _, ok := cl.Status(ctx); ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	svc := vulnsvc.New(st, status.New(st, quietLog), cl, quietLog)
	if len(up) > 0 {
		svc.SetUpgrader(up[0])
	}
	return svc
}

// ingestOldBookworm records bookworm's pre-DSA-5724-1 openssh on a server.
func ingestOldBookworm(t *testing.T, st *store.Store, id string) {
	t.Helper()
	f := facts.Facts{OS: facts.OSRelease{ID: "debian", VersionID: "12"}}
	inv := pkgmgr.Inventory{Manager: "apt", Packages: []pkgmgr.Package{{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh", Manager: "apt"}}}
	if err := inventory.New(st, inventory.Options{Log: quietLog}).Ingest(context.Background(), id, f, inv); err != nil {
		t.Fatal(err)
	}
}

// osvUpload is a multipart body with one ecosystem's fixture export.
func osvUpload(t *testing.T, eco string) ([]byte, string) {
	t.Helper()
	zipBytes, err := os.ReadFile(filepath.Join(vulndbtest.Build(t), eco, "all.zip"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("ecosystem", eco)
	w, _ := mw.CreateFormFile("file", "all.zip")
	w.Write(zipBytes)
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}
