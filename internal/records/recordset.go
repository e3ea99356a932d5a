package records

import (
	"slices"
	"strings"
)

// RecordSet is a named, typed set of record values with an optional TTL. It
// is the unit of templates, sync groups and zones. After NormalizeSet the
// name is relative to the zone ("@" for the apex), the type upper-case and
// the records canonical, deduplicated and sorted, so two sets with the same
// meaning compare equal with Equal.
type RecordSet struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     *int64   `json:"ttl,omitempty"`
	Records []string `json:"records"`
}

// Key returns the set's SetKey.
func (s RecordSet) Key() SetKey { return MakeKey(s.Name, s.Type) }

// Equal reports whether two normalized sets have the same content: name,
// type, TTL (an absent TTL differs from any explicit one) and records.
func (s RecordSet) Equal(o RecordSet) bool {
	if s.Name != o.Name || s.Type != o.Type {
		return false
	}
	if (s.TTL == nil) != (o.TTL == nil) || (s.TTL != nil && *s.TTL != *o.TTL) {
		return false
	}
	return slices.Equal(s.Records, o.Records)
}

// SameContent reports whether two normalized sets at the same key carry the
// same TTL and records.
func (s RecordSet) SameContent(o RecordSet) bool {
	o.Name, o.Type = s.Name, s.Type
	return s.Equal(o)
}

// Clone returns a deep copy, so plans never alias the caller's slices.
func (s RecordSet) Clone() RecordSet {
	c := s
	if s.TTL != nil {
		v := *s.TTL
		c.TTL = &v
	}
	c.Records = slices.Clone(s.Records)
	if c.Records == nil {
		c.Records = []string{}
	}
	return c
}

// SetKey names a record set inside a zone the way enforcement reports do:
// the relative name, one space, the type — "www A", "@ MX".
type SetKey string

// MakeKey builds a SetKey from a relative name and a type.
func MakeKey(name, typ string) SetKey { return SetKey(name + " " + typ) }

// Name returns the relative name part of the key.
func (k SetKey) Name() string { n, _, _ := strings.Cut(string(k), " "); return n }

// Type returns the type part of the key.
func (k SetKey) Type() string { _, t, _ := strings.Cut(string(k), " "); return t }

// compareSets orders sets by name (apex first, then by DNS canonical order of
// the relative names) and then by type, so reports and zone files are stable.
func compareSets(a, b RecordSet) int {
	if c := compareNames(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Type, b.Type)
}

// compareNames orders relative names: "@" first, then label by label from
// the right, as RFC 4034 §6.1 orders owner names.
func compareNames(a, b string) int {
	if a == b {
		return 0
	}
	if a == "@" {
		return -1
	}
	if b == "@" {
		return 1
	}
	for {
		la, ra, oka := lastLabel(a)
		lb, rb, okb := lastLabel(b)
		if c := strings.Compare(la, lb); c != 0 {
			return c
		}
		switch {
		case !oka && !okb:
			return 0
		case !oka:
			return -1
		case !okb:
			return 1
		}
		a, b = ra, rb
	}
}

// lastLabel splits the rightmost label off a relative name; ok is false
// when it was the only label.
func lastLabel(n string) (label, rest string, ok bool) {
	i := strings.LastIndexByte(n, '.')
	if i < 0 {
		return n, "", false
	}
	return n[i+1:], n[:i], true
}
