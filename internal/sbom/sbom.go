// Package sbom builds and reads the CycloneDX SBOM of a server: one
// component per installed package, with a purl that carries the
// distribution qualifier and, where the family has one, the source
// package; the operating system as a component of its own.
package sbom

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/lcmproject/lcm/internal/version"
	"github.com/lcmproject/lcm/internal/vulndb"
)

// Package is one installed package as the control plane records it.
// Container names the CVE-relevant container a package was read from
// (empty: the server's own); such a package carries the container's
// distribution in OSID and OSVersion.
type Package struct {
	Name, Version, Arch, Source, Manager string
	Container, OSID, OSVersion           string
}

// Server is what an SBOM describes.
type Server struct {
	ID, Name  string
	OSID      string // os-release ID: debian, ubuntu, alpine, rocky, rhel, sles, opensuse-leap, arch …
	OSVersion string // os-release VERSION_ID
	OSPretty  string
	Packages  []Package
}

// SourceProperty names the CycloneDX property carrying the source package.
const SourceProperty = "lcm:package:source"

// ContainerProperty names the CycloneDX property carrying the container a
// package was read from ("docker/web", "podman/db").
const ContainerProperty = "lcm:container"

// purlOf is the purl of p: a container's package on the container's
// distribution, the server's on the server's.
func purlOf(p Package, osID, osVersion string) string {
	if p.Container != "" {
		osID, osVersion = p.OSID, p.OSVersion
	}
	return PURL(p, osID, osVersion)
}

// purlType maps a package manager to its purl type.
func purlType(manager string) string {
	switch manager {
	case "apt", "dpkg":
		return "deb"
	case "dnf", "yum", "zypper", "rpm":
		return "rpm"
	case "apk":
		return "apk"
	case "pacman":
		return "alpm"
	}
	return ""
}

// namespace is the purl namespace of a distribution ("redhat" for RHEL,
// "opensuse" for openSUSE, the os-release ID otherwise).
func namespace(osID string) string {
	switch osID {
	case "rhel":
		return "redhat"
	case "opensuse-leap", "opensuse-tumbleweed":
		return "opensuse"
	case "sles", "sled":
		return "suse"
	case "":
		return "unknown"
	}
	return osID
}

// escape percent-encodes everything but purl's unreserved characters.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// PURL is the package URL of one package on a distribution:
// pkg:deb/debian/libssl3@3.0.15-1~deb12u1?arch=amd64&distro=debian-12&upstream=openssl
// (qualifiers sorted by key, as the purl spec's canonical form wants).
func PURL(p Package, osID, osVersion string) string {
	typ := purlType(p.Manager)
	if typ == "" {
		return ""
	}
	var q []string
	if p.Arch != "" {
		q = append(q, "arch="+escape(p.Arch))
	}
	if osID != "" {
		q = append(q, "distro="+escape(vulndb.DistroQualifier(osID, osVersion)))
	}
	if p.Source != "" && p.Source != p.Name {
		q = append(q, "upstream="+escape(p.Source))
	}
	s := "pkg:" + typ + "/" + escape(namespace(osID)) + "/" + escape(p.Name) + "@" + escape(p.Version)
	if len(q) > 0 {
		s += "?" + strings.Join(q, "&")
	}
	return s
}

// Build returns the SBOM of a server (CycloneDX 1.6). Components are
// sorted so that equal package sets give equal SBOMs apart from the
// serial number and timestamp.
func Build(s Server, now time.Time) *cdx.BOM {
	bom := cdx.NewBOM()
	bom.SpecVersion = cdx.SpecVersion1_6
	bom.JSONSchema = "http://cyclonedx.org/schema/bom-1.6.schema.json"
	bom.Metadata = &cdx.Metadata{
		Timestamp: now.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "lcm",
			Version: version.Get().Version}}},
		Component: &cdx.Component{BOMRef: "server:" + s.ID, Type: cdx.ComponentTypeDevice, Name: s.Name},
	}
	comps := make([]cdx.Component, 0, len(s.Packages)+1)
	osRef := "os:" + s.OSID + "@" + s.OSVersion
	comps = append(comps, cdx.Component{BOMRef: osRef, Type: cdx.ComponentTypeOS, Name: s.OSID, Version: s.OSVersion, Description: s.OSPretty})
	pkgs := append([]Package(nil), s.Packages...)
	sort.Slice(pkgs, func(i, j int) bool {
		a, b := pkgs[i], pkgs[j]
		if a.Container != b.Container {
			return a.Container < b.Container
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Arch != b.Arch {
			return a.Arch < b.Arch
		}
		return a.Version < b.Version
	})
	refs := make([]string, 0, len(pkgs))
	seen := map[string]bool{}
	for _, p := range pkgs {
		purl := purlOf(p, s.OSID, s.OSVersion)
		ref := purl
		if p.Container != "" {
			// The same package in a container and on the host (or in two
			// containers) stays one component each.
			ref = "container:" + p.Container + "/" + purl
		}
		if purl == "" || seen[ref] {
			continue
		}
		seen[ref] = true
		c := cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeLibrary, Name: p.Name, Version: p.Version, PackageURL: purl}
		var props []cdx.Property
		if p.Source != "" {
			props = append(props, cdx.Property{Name: SourceProperty, Value: p.Source})
		}
		if p.Container != "" {
			props = append(props, cdx.Property{Name: ContainerProperty, Value: p.Container})
		}
		if len(props) > 0 {
			c.Properties = &props
		}
		comps = append(comps, c)
		refs = append(refs, ref)
	}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{{Ref: osRef, Dependencies: &refs}}
	return bom
}

// Encode writes a BOM as JSON.
func Encode(w io.Writer, bom *cdx.BOM) error {
	enc := cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	enc.SetEscapeHTML(false)
	return enc.Encode(bom)
}

// Marshal is Encode into a byte slice.
func Marshal(bom *cdx.BOM) ([]byte, error) {
	var b bytes.Buffer
	if err := Encode(&b, bom); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Decode reads a CycloneDX JSON SBOM.
func Decode(r io.Reader) (*cdx.BOM, error) {
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(r, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return nil, fmt.Errorf("not a CycloneDX JSON SBOM: %w", err)
	}
	if bom.BOMFormat != cdx.BOMFormat {
		return nil, fmt.Errorf("not a CycloneDX SBOM (bomFormat %q)", bom.BOMFormat)
	}
	return &bom, nil
}

// ErrNoPackages is returned by Components for an SBOM without one
// matchable package.
var ErrNoPackages = errors.New("the SBOM lists no packages with a deb, rpm, apk or alpm purl")

// Components returns the packages of an SBOM for the matcher; a package
// of a container carries the container from its lcm:container property.
func Components(bom *cdx.BOM) []vulndb.Component {
	if bom.Components == nil {
		return nil
	}
	out := make([]vulndb.Component, 0, len(*bom.Components))
	for i := range *bom.Components {
		bc := &(*bom.Components)[i]
		if c, ok := ParsePURL(bc.PackageURL); ok {
			c.Container = propertyOf(bc, ContainerProperty)
			out = append(out, c)
		}
	}
	return out
}

// propertyOf is the value of a component's first property called name.
func propertyOf(c *cdx.Component, name string) string {
	if c.Properties == nil {
		return ""
	}
	for _, p := range *c.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// ParsePURL reads a distribution package URL back into a component:
// name, version, source (the upstream qualifier) and distro.
func ParsePURL(p string) (vulndb.Component, bool) {
	rest, ok := strings.CutPrefix(p, "pkg:")
	if !ok {
		return vulndb.Component{}, false
	}
	rest, query, _ := strings.Cut(rest, "?")
	query, _, _ = strings.Cut(query, "#")
	typ, rest, ok := strings.Cut(rest, "/")
	if !ok || (typ != "deb" && typ != "rpm" && typ != "apk" && typ != "alpm") {
		return vulndb.Component{}, false
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return vulndb.Component{}, false
	}
	name := rest[:at]
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	var err error
	var c vulndb.Component
	if c.Name, err = url.PathUnescape(name); err != nil {
		return vulndb.Component{}, false
	}
	if c.Version, err = url.PathUnescape(rest[at+1:]); err != nil {
		return vulndb.Component{}, false
	}
	qs, err := url.ParseQuery(query)
	if err != nil {
		return vulndb.Component{}, false
	}
	c.Distro, c.Source = qs.Get("distro"), qs.Get("upstream")
	if c.Source == "" {
		c.Source = c.Name
	}
	return c, c.Name != "" && c.Version != ""
}

// PackageSetKey fingerprints a server's packages and release (sha256 of
// the sorted purls): equal keys give equal findings.
func PackageSetKey(s Server) string {
	purls := make([]string, 0, len(s.Packages))
	for _, p := range s.Packages {
		purl := purlOf(p, s.OSID, s.OSVersion)
		if p.Container != "" {
			purl = p.Container + "/" + purl
		}
		purls = append(purls, purl)
	}
	sort.Strings(purls)
	h := sha256.New()
	for _, p := range purls {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// BuildGroup returns one SBOM for several servers (a server group): each
// server is a device component whose nested components are its OS and
// packages, so the same package on two servers stays two entries.
func BuildGroup(groupID, groupName string, servers []Server, now time.Time) *cdx.BOM {
	bom := cdx.NewBOM()
	bom.SpecVersion = cdx.SpecVersion1_6
	bom.JSONSchema = "http://cyclonedx.org/schema/bom-1.6.schema.json"
	bom.Metadata = &cdx.Metadata{
		Timestamp: now.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "lcm",
			Version: version.Get().Version}}},
		Component: &cdx.Component{BOMRef: "group:" + groupID, Type: cdx.ComponentTypeDevice, Name: groupName},
	}
	comps := make([]cdx.Component, 0, len(servers))
	for _, s := range servers {
		one := Build(s, now)
		inner := *one.Components
		// bom-refs must be unique in the document: prefix them per server.
		for i := range inner {
			inner[i].BOMRef = s.ID + "/" + inner[i].BOMRef
		}
		comps = append(comps, cdx.Component{BOMRef: "server:" + s.ID, Type: cdx.ComponentTypeDevice, Name: s.Name, Components: &inner})
	}
	bom.Components = &comps
	return bom
}
