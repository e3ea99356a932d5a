package records

import "fmt"

// OriginKind says who put a record set into a zone, which decides who may
// change or remove it.
type OriginKind int

// Origin kinds. The zero value is OriginManual so a set without an explicit
// origin is treated as hand-made data that automation never overwrites.
const (
	OriginManual    OriginKind = iota // created by a user in the zone
	OriginTemplate                    // copied from a project template
	OriginSyncGroup                   // enforced by a sync group
	OriginSource                      // bound to a source host (A/AAAA only)
)

// String returns the lower-case name used in the API and in logs.
func (k OriginKind) String() string {
	switch k {
	case OriginManual:
		return "manual"
	case OriginTemplate:
		return "template"
	case OriginSyncGroup:
		return "syncgroup"
	case OriginSource:
		return "source"
	}
	return fmt.Sprintf("OriginKind(%d)", int(k))
}

// Origin is the owner of a zone's record set: the kind plus the id of the
// template, sync group or source host (empty for manual sets).
type Origin struct {
	Kind OriginKind `json:"kind"`
	ID   string     `json:"id,omitempty"`
}

// Manual is the origin of hand-made sets.
func Manual() Origin { return Origin{Kind: OriginManual} }

// FromTemplate is the origin of a set copied from template id.
func FromTemplate(id string) Origin { return Origin{Kind: OriginTemplate, ID: id} }

// FromSyncGroup is the origin of a set enforced by sync group id.
func FromSyncGroup(id string) Origin { return Origin{Kind: OriginSyncGroup, ID: id} }

// FromSource is the origin of a set bound to source host id.
func FromSource(id string) Origin { return Origin{Kind: OriginSource, ID: id} }

// String renders the origin as "kind" or "kind:id".
func (o Origin) String() string {
	if o.ID == "" {
		return o.Kind.String()
	}
	return o.Kind.String() + ":" + o.ID
}

// ZoneSet is a record set stored in a zone together with its origin. A set
// bound to a source host may have no records (the source has no address of
// that family); such a set is kept but not served or exported.
type ZoneSet struct {
	RecordSet
	Origin Origin `json:"origin"`
}

// ParseOriginKind is the inverse of OriginKind.String.
func ParseOriginKind(s string) (OriginKind, bool) {
	for _, k := range []OriginKind{OriginManual, OriginTemplate, OriginSyncGroup, OriginSource} {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}
