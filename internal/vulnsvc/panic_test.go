package vulnsvc_test

import (
	"context"
	"io"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
	"github.com/lcmproject/lcm/internal/vulndb"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

// panickingScanner answers its status and panics on every scan.
type panickingScanner struct{}

func (panickingScanner) Scan(context.Context, string, *cdx.BOM) ([]vulndb.Finding, string, error) {
	panic("the scanner client met an answer it did not expect")
}
func (panickingScanner) Status(context.Context) (bus.ScannerStatus, bool) {
	return bus.ScannerStatus{Enabled: true, Engine: "osv"}, true
}
func (panickingScanner) Upload(context.Context, string, io.ReaderAt, int64) (int, error) {
	return 0, nil
}

// TestScanPanicIsRecovered: a scan goroutine that panics (one per package
// set) is recovered, logged and counted; the fleet scan and a rescan after
// a package change return (no result is waited for forever) and count the
// servers as failed instead of killing the process.
func TestScanPanicIsRecovered(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, "")
	stat := status.New(st, quiet)
	inv := inventory.New(st, inventory.Options{Log: quiet, OnIngest: stat.RecomputeMany})
	svc := vulnsvc.New(st, stat, panickingScanner{}, quiet)
	var ids []string
	for i, v := range []string{"1:9.2p1-2+deb12u2", "1:9.2p1-2+deb12u3"} { // two package sets
		id := addServer(t, st, []string{"web-01", "web-02"}[i])
		f, pk := bookworm(deb("openssh-server", v, "openssh"))
		if err := inv.Ingest(ctx, id, f, pk); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	panics := testutil.CountPanics(t)
	n, err := svc.ScanAll(ctx)
	if err != nil || n != 0 {
		t.Fatalf("fleet scan with a panicking scanner: %d scanned, %v", n, err)
	}
	if got := panics(); got != 2 {
		t.Fatalf("%d panics counted after the fleet scan, want 2 (one per package set)", got)
	}
	svc.Rescan(ctx, ids)
	if got := panics(); got != 4 {
		t.Fatalf("%d panics counted after the rescan, want 4", got)
	}
}
