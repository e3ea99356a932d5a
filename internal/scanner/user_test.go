package scanner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/bus/bustest"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

// TestScannerUserServesUnderLeastPrivilege runs a scanner connected with
// bus.ScannerUser to a NATS that enforces it: the database upload reaches
// it through the object store, status and scans are answered (a large
// result through the object store too), and what the account must not do
// is refused.
func TestScannerUserServesUnderLeastPrivilege(t *testing.T) {
	srv := bustest.StartScanner(t)
	api := srv.API
	sb, err := bus.Connect(context.Background(), bus.ClientOptions{URL: srv.URL, User: bustest.ScannerUser, Password: bustest.ScannerPassword,
		TLS: srv.ClientTLS(t), Name: "lcm-scanner"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := scanner.New(t.TempDir(), "least-privilege", quiet)
	s.InlineLimit = 64 // every result goes through the object store
	done := make(chan struct{})
	sctx, stop := context.WithCancel(ctx)
	go func() { defer close(done); _ = s.Serve(sctx, sb, 2) }()
	t.Cleanup(func() { stop(); <-done })

	c := &scanner.Client{Bus: api}
	testutil.WaitFor(t, 10*time.Second, "scanner answers status", func() bool { _, ok := c.Status(ctx); return ok })
	zipPath := filepath.Join(vulndbtest.Build(t), "Debian", "all.zip")
	f, err := os.Open(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if _, err := c.Upload(ctx, "Debian", f, fi.Size()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "scanner loaded the uploaded database", func() bool {
		st, _ := c.Status(ctx)
		return st.Enabled && st.Records == 5
	})
	fs, _, err := c.Scan(ctx, "k", sbom.Build(oldBookworm, time.Now()))
	if err != nil || len(fs) != 3 {
		t.Fatalf("scan under the scanner account: %d findings, %v", len(fs), err)
	}

	// What the account may not do.
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) }
	c1, x1 := short()
	if _, err := sb.JS.CreateStream(c1, jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}}); err == nil {
		t.Error("the scanner account created a stream")
	}
	x1()
	c2, x2 := short()
	if _, err := sb.JS.Publish(c2, bus.JobSubject("default", "srv-1"), []byte("{}")); err == nil {
		t.Error("the scanner account published a job")
	}
	x2()
	c3, x3 := short()
	if st, err := sb.JS.Stream(c3, "OBJ_"+bus.BucketVulnDB); err != nil {
		t.Errorf("the scanner account cannot bind the object store: %v", err)
	} else if err := st.Purge(c3); err == nil {
		t.Error("the scanner account purged the uploaded databases")
	}
	x3()
	for _, bucket := range []string{bus.BucketLocks, bus.BucketAgents} {
		c4, x4 := short()
		if _, err := sb.JS.KeyValue(c4, bucket); err == nil {
			t.Errorf("the scanner account opened bucket %s", bucket)
		}
		x4()
	}
	if _, err := sb.NC.SubscribeSync(bus.SubjectJobEventsAll); err != nil {
		t.Fatal(err)
	}
	_ = sb.NC.Flush()
	// The server reports the violation asynchronously.
	testutil.WaitFor(t, 5*time.Second, "subscribing to job events refused", func() bool {
		e := sb.NC.LastError()
		return e != nil && strings.Contains(e.Error(), "Permissions Violation")
	})
}
