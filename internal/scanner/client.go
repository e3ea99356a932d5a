package scanner

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/vulndb"
)

// Client is the control plane's side of the scan protocol.
type Client struct {
	Bus     *bus.Bus
	Timeout time.Duration // per request; 0 = 2 minutes
}

// ErrDisabled is returned while no scanner has a database (Reason says why).
type ErrDisabled struct{ Reason string }

func (e *ErrDisabled) Error() string { return "vulnerability scanning is disabled: " + e.Reason }

// ErrNoScanner is returned when no scanner answered.
var ErrNoScanner = errors.New("no scanner answered (is lcm-scanner running, or scanner.disabled set?)")

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 2 * time.Minute
}

// Scan sends one SBOM to a scanner and returns its findings.
func (c *Client) Scan(ctx context.Context, key string, bom *cdx.BOM) ([]vulndb.Finding, string, error) {
	var raw bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&raw, gzip.BestSpeed)
	enc := cdx.NewBOMEncoder(zw, cdx.BOMFileFormatJSON)
	if err := enc.Encode(bom); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	req, _ := json.Marshal(bus.ScanRequest{V: bus.MessageVersion, Key: key, SBOMGzip: raw.Bytes()})
	out, err := c.Bus.Request(ctx, bus.SubjectScanRequest, req, c.timeout())
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNoScanner, err)
	}
	var res bus.ScanResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, "", fmt.Errorf("unreadable scanner answer: %w", err)
	}
	switch {
	case res.Disabled:
		return nil, "", &ErrDisabled{Reason: res.Reason}
	case res.Error != "":
		return nil, res.Engine, errors.New("scanner: " + res.Error)
	}
	gz := res.FindingsGzip
	if res.FindingsObject != "" {
		obs, err := VulnDBStore(ctx, c.Bus)
		if err != nil {
			return nil, res.Engine, err
		}
		if gz, err = obs.GetBytes(ctx, res.FindingsObject); err != nil {
			return nil, res.Engine, fmt.Errorf("fetching a large scan result: %w", err)
		}
		_ = obs.Delete(ctx, res.FindingsObject)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, res.Engine, fmt.Errorf("unreadable findings: %w", err)
	}
	var fs []vulndb.Finding
	if err := json.NewDecoder(zr).Decode(&fs); err != nil {
		return nil, res.Engine, fmt.Errorf("unreadable findings: %w", err)
	}
	return fs, res.Engine, nil
}

// Statuses asks every scanner for its status (each answers; the replies
// arriving within a quarter second of each other are gathered).
func (c *Client) Statuses(ctx context.Context) []bus.ScannerStatus {
	outs, err := c.Bus.RequestAll(ctx, bus.SubjectScanStatus, nil, 5*time.Second, 250*time.Millisecond)
	if err != nil {
		return nil
	}
	var sts []bus.ScannerStatus
	for _, out := range outs {
		var st bus.ScannerStatus
		if json.Unmarshal(out, &st) == nil {
			sts = append(sts, st)
		}
	}
	return sts
}

// Status reports the scanners as one: scans go to any of them, so the
// status is the weakest's — disabled when any is (its reason names it), else
// the one with the oldest database — with the match-cache counters summed
// and Scanner naming them all. ok is false when none answered.
func (c *Client) Status(ctx context.Context) (bus.ScannerStatus, bool) {
	return Aggregate(c.Statuses(ctx))
}

// Aggregate is Status over given replies.
func Aggregate(sts []bus.ScannerStatus) (bus.ScannerStatus, bool) {
	if len(sts) == 0 {
		return bus.ScannerStatus{}, false
	}
	sort.Slice(sts, func(i, j int) bool { return sts[i].Scanner < sts[j].Scanner })
	worst := 0
	older := func(a, b bus.ScannerStatus) bool { // a is weaker than b
		if a.Enabled != b.Enabled {
			return !a.Enabled
		}
		if a.Newest == nil || b.Newest == nil {
			return a.Newest == nil && b.Newest != nil
		}
		return a.Newest.Before(*b.Newest)
	}
	names := make([]string, len(sts))
	var cache *bus.CacheCounters
	for i, st := range sts {
		names[i] = st.Scanner
		if older(st, sts[worst]) {
			worst = i
		}
		if st.Cache != nil {
			if cache == nil {
				cache = &bus.CacheCounters{}
			}
			cache.Hits += st.Cache.Hits
			cache.Misses += st.Cache.Misses
			cache.Entries += st.Cache.Entries
		}
	}
	out := sts[worst]
	out.Cache = cache
	if len(sts) > 1 {
		out.Scanner = strings.Join(names, ", ")
		if !out.Enabled {
			out.Reason = fmt.Sprintf("%s (scanner %s, 1 of %d)", out.Reason, sts[worst].Scanner, len(sts))
		}
	}
	return out, true
}

// Upload stores one ecosystem's export in the bus's object store and
// tells every scanner to sync. It checks first that the zip holds OSV
// records (it returns the record count).
func (c *Client) Upload(ctx context.Context, ecosystem string, zipFile io.ReaderAt, size int64) (int, error) {
	n, err := vulndb.CheckZip(zipFile, size)
	if err != nil {
		return 0, err
	}
	obs, err := VulnDBStore(ctx, c.Bus)
	if err != nil {
		return 0, err
	}
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: ecosystem + "/all.zip"}, io.NewSectionReader(zipFile, 0, size)); err != nil {
		return 0, err
	}
	return n, c.Bus.Notify(bus.SubjectScanDBUpdated, []byte(ecosystem))
}

// KeyOf is the package-set key of an SBOM's components: servers with the
// same packages on the same release share it, and are matched once.
func KeyOf(s sbom.Server) string { return sbom.PackageSetKey(s) }
