package pkgmgr

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// zypperUpdate is one <update> element of zypper's XML output.
type zypperUpdate struct {
	Kind        string `xml:"kind,attr"`
	Name        string `xml:"name,attr"`
	Edition     string `xml:"edition,attr"`
	EditionOld  string `xml:"edition-old,attr"`
	Arch        string `xml:"arch,attr"`
	Status      string `xml:"status,attr"`
	Category    string `xml:"category,attr"`
	Summary     string `xml:"summary"`
	Description string `xml:"description"`
}

// zypperUpdates streams the <update> elements, skipping everything else
// (messages, progress). Whatever was read before a syntax error is returned
// with the error.
func zypperUpdates(out []byte, parser string) ([]zypperUpdate, error) {
	dec := xml.NewDecoder(bytes.NewReader(out))
	var list []zypperUpdate
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return list, nil
		}
		if err != nil {
			return list, &domain.Error{Kind: domain.ErrInvalid, Code: "bad_xml", Message: parser + ": " + err.Error()}
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "update" {
			continue
		}
		var u zypperUpdate
		if err := dec.DecodeElement(&u, &se); err != nil {
			return list, &domain.Error{Kind: domain.ErrInvalid, Code: "bad_xml", Message: parser + ": " + err.Error()}
		}
		list = append(list, u)
	}
}

// ParseZypperUpdates parses "zypper --xmlout list-updates":
//
//	<update kind="package" name="libopenssl3" edition="3.0.8-150500.5.8.1"
//	        arch="x86_64" edition-old="3.0.8-150500.5.3.1">
func ParseZypperUpdates(out []byte) ([]Upgradable, error) {
	list, err := zypperUpdates(out, "zypper list-updates")
	var ups []Upgradable
	for _, u := range list {
		if u.Kind != "" && u.Kind != "package" || u.Name == "" || u.Edition == "" {
			continue
		}
		ups = append(ups, Upgradable{Name: u.Name, Current: u.EditionOld, Candidate: u.Edition, Arch: u.Arch})
	}
	return ups, err
}

// ParseZypperSecurityPatches parses "zypper --xmlout list-patches --category
// security" and returns the package names the needed security patches are
// for. The XML does not list a patch's packages, so the names come from the
// summary convention "Security update for openssl-3, libopenssl3"; matching
// is therefore best effort (the security upgrade itself installs patches
// exactly). Patches already applied or not applicable are ignored.
func ParseZypperSecurityPatches(out []byte) (map[string]bool, error) {
	list, err := zypperUpdates(out, "zypper list-patches")
	names := map[string]bool{}
	for _, u := range list {
		if u.Kind != "patch" || (u.Status != "" && u.Status != "needed") ||
			(u.Category != "" && u.Category != "security") {
			continue
		}
		s := strings.TrimSpace(u.Summary)
		i := strings.Index(strings.ToLower(s), "update for ")
		if i < 0 {
			continue
		}
		for _, part := range strings.FieldsFunc(s[i+len("update for "):], func(r rune) bool {
			return r == ',' || r == ' '
		}) {
			if part != "and" && part != "" {
				names[strings.ToLower(part)] = true
			}
		}
	}
	return names, err
}

// markZypperSecurity flags updates whose name, or the name with its
// trailing library version dropped, is named by a security patch.
func markZypperSecurity(ups []Upgradable, patched map[string]bool) {
	for i := range ups {
		n := strings.ToLower(ups[i].Name)
		if patched[n] || patched[strings.TrimRight(n, "0123456789_-")] {
			ups[i].Security = true
		}
	}
}
