package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/lcmproject/lcm/internal/pkgmgr"
)

// component is one package of the SBOM, parsed from its purl
// (pkg:deb/debian/openssl@3.0.17-1~deb12u2?arch=amd64&distro=debian-12).
type component struct {
	Name, Version, Ecosystem string
}

// ecosystems maps purl types to OSV ecosystems whose versions we compare.
var ecosystems = map[string]string{"deb": "Debian", "rpm": "Red Hat", "apk": "Alpine"}

func readSBOM(path string) ([]component, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return nil, fmt.Errorf("%s is not a CycloneDX JSON SBOM: %w", path, err)
	}
	if bom.BOMFormat != cdx.BOMFormat {
		return nil, fmt.Errorf("%s is not a CycloneDX SBOM (bomFormat %q)", path, bom.BOMFormat)
	}
	var out []component
	if bom.Components == nil {
		return out, nil
	}
	for _, c := range *bom.Components {
		if comp, ok := parsePURL(c.PackageURL); ok {
			out = append(out, comp)
		}
	}
	return out, nil
}

func parsePURL(p string) (component, bool) {
	rest, ok := strings.CutPrefix(p, "pkg:")
	if !ok {
		return component{}, false
	}
	rest, _, _ = strings.Cut(rest, "?")
	typ, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return component{}, false
	}
	eco, ok := ecosystems[typ]
	if !ok {
		return component{}, false
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return component{}, false
	}
	name := rest[:at]
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	name, _ = url.PathUnescape(name)
	ver, _ := url.PathUnescape(rest[at+1:])
	return component{Name: name, Version: ver, Ecosystem: eco}, name != "" && ver != ""
}

// advisory is the part of an OSV record the matcher needs.
type advisory struct {
	ID       string `json:"id"`
	Summary  string `json:"summary"`
	Affected []struct {
		Package struct {
			Ecosystem string `json:"ecosystem"`
			Name      string `json:"name"`
		} `json:"package"`
		Ranges []struct {
			Type   string `json:"type"`
			Events []struct {
				Introduced string `json:"introduced,omitempty"`
				Fixed      string `json:"fixed,omitempty"`
			} `json:"events"`
		} `json:"ranges"`
	} `json:"affected"`
	DatabaseSpecific struct {
		Severity string `json:"severity"`
	} `json:"database_specific"`
}

func readAdvisories(dir string) ([]advisory, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []advisory
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var a advisory
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, fmt.Errorf("advisory %s: %w", f, err)
		}
		out = append(out, a)
	}
	return out, nil
}

var severityRank = map[string]int{"low": 1, "medium": 2, "high": 3, "critical": 4}

// finding is one vulnerable package.
type finding struct {
	ID       string `json:"id"`
	Package  string `json:"package"`
	Version  string `json:"version"`
	Fixed    string `json:"fixed,omitempty"`
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
}

func match(comps []component, advs []advisory, minRank int) []finding {
	byName := map[string][]component{}
	for _, c := range comps {
		byName[c.Ecosystem+"/"+c.Name] = append(byName[c.Ecosystem+"/"+c.Name], c)
	}
	out := []finding{}
	for _, a := range advs {
		sev := strings.ToLower(a.DatabaseSpecific.Severity)
		if severityRank[sev] < minRank {
			continue
		}
		for _, af := range a.Affected {
			eco, _, _ := strings.Cut(af.Package.Ecosystem, ":") // "Debian:12" → "Debian"
			for _, c := range byName[eco+"/"+af.Package.Name] {
				for _, r := range af.Ranges {
					if r.Type != "ECOSYSTEM" {
						continue
					}
					if fixed, hit := inRange(c, r.Events); hit {
						out = append(out, finding{ID: a.ID, Package: c.Name, Version: c.Version, Fixed: fixed, Severity: sev, Summary: a.Summary})
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if severityRank[out[i].Severity] != severityRank[out[j].Severity] {
			return severityRank[out[i].Severity] > severityRank[out[j].Severity]
		}
		return out[i].ID+out[i].Package < out[j].ID+out[j].Package
	})
	return out
}

// inRange applies OSV's event semantics: affected from an "introduced"
// version (0 = from the start) up to, not including, the next "fixed".
func inRange(c component, events []struct {
	Introduced string `json:"introduced,omitempty"`
	Fixed      string `json:"fixed,omitempty"`
}) (string, bool) {
	cmp := pkgmgr.CompareDeb
	if c.Ecosystem == "Red Hat" {
		cmp = pkgmgr.CompareRPM
	}
	affected := false
	for _, e := range events {
		switch {
		case e.Introduced != "":
			if e.Introduced == "0" || cmp(c.Version, e.Introduced) >= 0 {
				affected = true
			}
		case e.Fixed != "":
			if affected && cmp(c.Version, e.Fixed) < 0 {
				return e.Fixed, true
			}
			affected = false
		}
	}
	return "", affected
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
