package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/nats-io/nats.go"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/bus/bustest"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

const (
	scanUser     = "scanner"
	scanPassword = "scanner-secret"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// scannerBinary is $LCM_SCANNER_BIN, or lcm-scanner built from this
// checkout once per test process.
func scannerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LCM_SCANNER_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lcm-scanner-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "lcm-scanner")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// listeningNATS starts lcm-api's embedded NATS as a scaled deployment runs
// it: listening with TLS, the API's full user and the scanner's
// least-privilege one (bus.ScannerUser), streams and buckets created.
func listeningNATS(t *testing.T) (*bus.Bus, string, string) {
	t.Helper()
	srv := bustest.Start(t, bus.ScannerUser(scanUser, scanPassword))
	// lcm-api creates the object store of uploaded exports at start.
	if _, err := scanner.VulnDBStore(context.Background(), srv.API); err != nil {
		t.Fatal(err)
	}
	return srv.API, srv.URL, srv.CAFile
}

type scannerProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	mu     *sync.Mutex
}

func (p scannerProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// startScanner runs `lcm-scanner serve` as its own process with the
// scanner's NATS account; the password comes through the _FILE variant.
func startScanner(t *testing.T, url, ca, db string, extra ...string) scannerProc {
	t.Helper()
	pw := filepath.Join(t.TempDir(), "nats-password")
	if err := os.WriteFile(pw, []byte(scanPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(scannerBinary(t), append([]string{"serve", "-nats-url", url, "-nats-user", scanUser, "-nats-ca", ca, "-db", db}, extra...)...)
	cmd.Env = append(os.Environ(), "LCM_SCANNER_NATS_PASSWORD_FILE="+pw)
	p := scannerProc{cmd: cmd, stderr: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stderr = lockedWriter{mu: p.mu, w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if strings.Contains(p.log(), "Permissions Violation") || strings.Contains(p.log(), "permissions violation") {
			t.Errorf("the scanner hit a NATS permission it lacks:\n%s", p.log())
		}
	})
	return p
}

var oldBookworm = sbom.Server{ID: "srv-1", Name: "web-01", OSID: "debian", OSVersion: "12", Packages: []sbom.Package{
	{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh", Manager: "apt"},
	{Name: "libc6", Version: "2.36-9+deb12u2", Arch: "amd64", Source: "glibc", Manager: "apt"},
	{Name: "libssl3", Version: "3.0.14-1~deb12u1", Arch: "amd64", Source: "openssl", Manager: "apt"},
}}

// TestServeAsSeparateProcesses runs two real lcm-scanner processes against
// a listening NATS with the scanner's least-privilege account: the status
// the control plane sees is the weakest scanner's (disabled while one has
// no database), an upload reaches both through the object store, scan
// requests are shared through the queue group, a result too large for a
// reply comes back through the object store, and neither process hits a
// permission it lacks.
func TestServeAsSeparateProcesses(t *testing.T) {
	api, url, ca := listeningNATS(t)
	a := startScanner(t, url, ca, vulndbtest.Build(t))
	b := startScanner(t, url, ca, t.TempDir(), "-max-inline-result", "64")
	c := &scanner.Client{Bus: api, Timeout: 30 * time.Second}
	ctx := context.Background()

	var sts []bus.ScannerStatus
	testutil.WaitFor(t, 30*time.Second, "both scanners answer the status request", func() bool {
		sts = c.Statuses(ctx)
		return len(sts) == 2
	})
	st, ok := scanner.Aggregate(sts)
	if !ok || st.Enabled || !strings.Contains(st.Reason, "1 of 2") || !strings.Contains(st.Scanner, ", ") {
		t.Fatalf("aggregate with one scanner lacking a database: %+v", st)
	}

	// Upload the Debian export: both scanners sync it from LCM_VULNDB.
	zip := filepath.Join(vulndbtest.Build(t), "Debian", "all.zip")
	f, err := os.Open(zip)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if _, err := c.Upload(ctx, "Debian", f, fi.Size()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "both scanners load the uploaded export", func() bool {
		sts = c.Statuses(ctx)
		st, ok = scanner.Aggregate(sts)
		return len(sts) == 2 && sts[0].Enabled && sts[1].Enabled && ok && st.Enabled && st.Cache != nil
	})

	// Twenty requests at once: both processes take a share.
	bom := sbom.Build(oldBookworm, time.Now())
	var raw bytes.Buffer
	zw := gzip.NewWriter(&raw)
	if err := cdx.NewBOMEncoder(zw, cdx.BOMFileFormatJSON).Encode(bom); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	req, _ := json.Marshal(bus.ScanRequest{V: bus.MessageVersion, Key: "k", SBOMGzip: raw.Bytes()})
	var mu sync.Mutex
	by := map[string]int{}
	viaStore := 0
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := api.Request(ctx, bus.SubjectScanRequest, req, 30*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			var res bus.ScanResult
			if err := json.Unmarshal(out, &res); err != nil || res.Error != "" || res.Disabled {
				t.Errorf("result %+v %v", res, err)
				return
			}
			mu.Lock()
			by[res.Scanner]++
			if res.FindingsObject != "" {
				viaStore++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(by) != 2 {
		t.Fatalf("the queue group did not share the work: %v", by)
	}

	// Scanner b (inline limit 64 bytes) stored each of its results in the
	// object store (a put its account may do); the client fetches one.
	if viaStore == 0 || viaStore == 20 {
		t.Fatalf("%d of 20 results went through the object store, want scanner b's share", viaStore)
	}
	testutil.WaitFor(t, 30*time.Second, "a scan through the client answered by each scanner", func() bool {
		fs, engine, err := c.Scan(ctx, "k", bom)
		if err != nil || engine != scanner.Engine || len(fs) != 5 {
			t.Fatalf("scan: %d findings, %s, %v", len(fs), engine, err)
		}
		return true
	})
	_, _ = a, b // their logs are checked for permission violations at cleanup
}

// TestScannerUserIsLeastPrivilege connects with the scanner's NATS account
// and tries what it must not do: publish job work, job events or a
// credential request, read the job-event stream, touch a KV bucket, create
// or delete a stream. The server refuses each.
func TestScannerUserIsLeastPrivilege(t *testing.T) {
	_, url, ca := listeningNATS(t)
	perr := make(chan error, 16)
	nc, err := nats.Connect(url, nats.UserInfo(scanUser, scanPassword), nats.RootCAs(ca),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { perr <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	violation := func(what, subject string) {
		t.Helper()
		select {
		case err := <-perr:
			if !strings.Contains(err.Error(), "Permissions Violation") || !strings.Contains(err.Error(), subject) {
				t.Errorf("%s: unexpected error %v", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: no permissions violation reported", what)
		}
	}
	for _, subj := range []string{bus.JobSubject("default", "srv-1"), bus.JobStateSubject("job-1"), bus.SubjectCredsRequest,
		"$JS.API.STREAM.CREATE.EVIL", "$JS.API.STREAM.DELETE.OBJ_" + bus.BucketVulnDB, "$KV." + bus.BucketLocks + ".x"} {
		if err := nc.Publish(subj, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		violation("publish "+subj, subj)
	}
	for _, subj := range []string{bus.JobStateSubject("*"), "lcm.jobs.>"} {
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		violation("subscribe "+subj, subj)
	}
}
