package scanner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/vulndb"
)

// EngineTrivy is the Trivy engine's name.
const EngineTrivy = "trivy"

// Trivy runs `trivy sbom` on an SBOM with its own, already downloaded
// database (--skip-db-update --offline-scan: no network at scan time).
type Trivy struct {
	Bin      string        // path of the trivy binary
	CacheDir string        // trivy's --cache-dir (holds its DB); "" = trivy's default
	Timeout  time.Duration // per scan; 0 = 5 minutes
}

// TrivyDB is what Trivy's db/metadata.json says of its vulnerability
// database: when it was built (UpdatedAt, the database's age) and
// downloaded.
type TrivyDB struct {
	Version      int       `json:"Version"`
	UpdatedAt    time.Time `json:"UpdatedAt"`
	DownloadedAt time.Time `json:"DownloadedAt"`
	NextUpdate   time.Time `json:"NextUpdate"`
}

// Database reads Trivy's database metadata from its cache directory
// (<cache>/db/metadata.json; the default cache is $XDG_CACHE_HOME/trivy,
// else ~/.cache/trivy). An error says why Trivy cannot scan offline.
func (t *Trivy) Database() (TrivyDB, error) {
	dir := t.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return TrivyDB{}, fmt.Errorf("trivy: no cache directory: %w", err)
		}
		dir = filepath.Join(base, "trivy")
	}
	p := filepath.Join(dir, "db", "metadata.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return TrivyDB{}, fmt.Errorf("trivy has no vulnerability database (%s missing): fill its cache with `trivy image --download-db-only --cache-dir %s` on a machine with internet", p, dir)
	}
	var m TrivyDB
	if err := json.Unmarshal(b, &m); err != nil || m.UpdatedAt.IsZero() {
		return TrivyDB{}, fmt.Errorf("trivy: unreadable database metadata %s", p)
	}
	return m, nil
}

// FindTrivy returns the trivy binary on PATH, or "".
func FindTrivy() string {
	p, err := exec.LookPath("trivy")
	if err != nil {
		return ""
	}
	return p
}

// Scan writes the SBOM to a temporary file and runs trivy on it.
func (t *Trivy) Scan(ctx context.Context, sbomJSON []byte) ([]vulndb.Finding, error) {
	dir, err := os.MkdirTemp("", "lcm-trivy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "sbom.cdx.json")
	if err := os.WriteFile(in, sbomJSON, 0o600); err != nil {
		return nil, err
	}
	timeout := t.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"sbom", "--offline-scan", "--skip-db-update", "--format", "json", "--quiet"}
	if t.CacheDir != "" {
		args = append(args, "--cache-dir", t.CacheDir)
	}
	cmd := exec.CommandContext(ctx, t.Bin, append(args, in)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[len(msg)-500:]
		}
		return nil, fmt.Errorf("trivy: %v: %s", err, msg)
	}
	return ParseTrivy(stdout.Bytes())
}

// trivyReport is the part of Trivy's JSON report (SchemaVersion 2) read here.
type trivyReport struct {
	SchemaVersion int `json:"SchemaVersion"`
	Metadata      struct {
		OS struct {
			Family string `json:"Family"`
			Name   string `json:"Name"`
		} `json:"OS"`
	} `json:"Metadata"`
	Results []struct {
		Target          string `json:"Target"`
		Class           string `json:"Class"`
		Vulnerabilities []struct {
			VulnerabilityID  string `json:"VulnerabilityID"`
			PkgName          string `json:"PkgName"`
			InstalledVersion string `json:"InstalledVersion"`
			FixedVersion     string `json:"FixedVersion"`
			Title            string `json:"Title"`
			Severity         string `json:"Severity"`
			DataSource       struct {
				ID string `json:"ID"`
			} `json:"DataSource"`
			CVSS map[string]struct {
				V3Score float64 `json:"V3Score"`
			} `json:"CVSS"`
		} `json:"Vulnerabilities"`
	} `json:"Results"`
}

// ParseTrivy turns a Trivy JSON report into findings: one per (CVE,
// package); the OS packages' results only.
func ParseTrivy(b []byte) ([]vulndb.Finding, error) {
	var r trivyReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("trivy report: %w", err)
	}
	if r.SchemaVersion != 2 {
		return nil, errors.New("trivy report: unsupported SchemaVersion (want 2)")
	}
	eco := r.Metadata.OS.Family
	if eco != "" {
		eco = strings.ToUpper(eco[:1]) + eco[1:] + ":" + r.Metadata.OS.Name
	}
	out := []vulndb.Finding{}
	for _, res := range r.Results {
		if res.Class != "os-pkgs" {
			continue
		}
		for _, v := range res.Vulnerabilities {
			if v.VulnerabilityID == "" || v.PkgName == "" {
				continue
			}
			score := 0.0
			for _, c := range v.CVSS {
				score = max(score, c.V3Score)
			}
			f := vulndb.Finding{Advisory: v.VulnerabilityID, Package: v.PkgName, Installed: v.InstalledVersion,
				Fixed: strings.TrimSpace(strings.Split(v.FixedVersion, ",")[0]), Severity: strings.ToLower(v.Severity),
				CVSS: score, Summary: v.Title, Ecosystem: eco}
			if vulndb.SeverityRank(f.Severity) == 0 {
				f.Severity = vulndb.SevUnknown
			}
			if strings.HasPrefix(v.VulnerabilityID, "CVE-") {
				f.CVEs = []string{v.VulnerabilityID}
			}
			out = append(out, f)
		}
	}
	vulndb.SortFindings(out)
	return out, nil
}
