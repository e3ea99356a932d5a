package records

import (
	"slices"
)

// SyncGroupRef identifies the sync group being enforced and its priority.
// A lower Priority number wins (0 beats 10), as with MX preferences; equal
// priorities are broken by the lower ID, so the outcome never depends on
// the order in which groups were enforced.
type SyncGroupRef struct {
	ID       string
	Priority int
}

// outranks reports whether g governs a set before o.
func (g SyncGroupRef) outranks(o SyncGroupRef) bool {
	if g.Priority != o.Priority {
		return g.Priority < o.Priority
	}
	return g.ID < o.ID
}

// ZoneState is what the planner needs to know about one member zone: its
// current sets with origins and the priorities of the other sync groups
// that own sets there. Sets must be normalized for the zone.
type ZoneState struct {
	ZoneID string
	Sets   []ZoneSet
	// GroupPriority maps the id of every other sync group owning a set in
	// the zone to its priority. A group missing here (deleted) ranks last.
	GroupPriority map[string]int
}

// Plan is the change one enforcement makes to one zone. Put holds sets to
// create or replace (matched by key); Delete the keys to remove. The zone's
// serial must be bumped when the plan is not empty.
type Plan struct {
	ZoneID string
	Put    []ZoneSet
	Delete []SetKey
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Put) == 0 && len(p.Delete) == 0 }

// Apply returns the zone's sets after the plan, sorted; the input is not
// modified. The store applies plans itself; Apply serves tests and
// in-memory previews.
func (p Plan) Apply(sets []ZoneSet) []ZoneSet {
	byKey := make(map[SetKey]ZoneSet, len(sets)+len(p.Put))
	for _, s := range sets {
		byKey[s.Key()] = s
	}
	for _, k := range p.Delete {
		delete(byKey, k)
	}
	for _, s := range p.Put {
		byKey[s.Key()] = s
	}
	out := make([]ZoneSet, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ZoneSet) int { return compareSets(a.RecordSet, b.RecordSet) })
	return out
}

// Report is the outcome of enforcing a sync group on one zone. Every slice
// is non-nil and sorted, so it serialises as [] rather than null.
type Report struct {
	ZoneID          string   `json:"zoneId"`
	Applied         []string `json:"applied"`
	SkippedPriority []string `json:"skippedPriority"`
	Conflicts       []string `json:"conflicts"`
}

// PlanSync decides how sync group g's desired sets (normalized for this
// zone with NormalizeSet) are enforced on one zone. For each desired set,
// against the set with the same key in the zone:
//
//   - none there, and no CNAME/other-data clash at the name → created, applied
//   - owned by g, same content → applied, no write
//   - owned by g, other content → replaced, applied
//   - owned by a sync group that outranks g → skippedPriority
//   - owned by a sync group g outranks (or a deleted group) → taken over:
//     written with g as origin (even if equal), applied
//   - manual, template or source-bound, same content → applied, left alone
//     (origin unchanged, so g never deletes it later)
//   - manual, template or source-bound, other content → conflicts
//   - a CNAME beside other data at the name, in either direction, with a
//     set not owned by g → conflicts (nothing written)
//
// Sets owned by g whose key is no longer desired are deleted; sets of any
// other origin are never deleted. Running PlanSync again on the result
// gives an empty plan and the same report.
func PlanSync(g SyncGroupRef, desired []RecordSet, zone ZoneState) (Plan, Report) {
	plan := Plan{ZoneID: zone.ZoneID}
	rep := Report{ZoneID: zone.ZoneID, Applied: []string{}, SkippedPriority: []string{}, Conflicts: []string{}}
	mine := FromSyncGroup(g.ID)

	want := make(map[SetKey]bool, len(desired))
	for _, d := range desired {
		want[d.Key()] = true
	}
	current := make(map[SetKey]ZoneSet, len(zone.Sets))
	foreign := make(map[string][]string) // name → types of sets not owned by g
	for _, s := range zone.Sets {
		current[s.Key()] = s
		if s.Origin == mine {
			if !want[s.Key()] {
				plan.Delete = append(plan.Delete, s.Key())
			}
			continue
		}
		foreign[s.Name] = append(foreign[s.Name], s.Type)
	}

	for _, d := range desired {
		key := d.Key()
		cur, exists := current[key]
		switch {
		case clashes(d, foreign[d.Name]):
			rep.Conflicts = append(rep.Conflicts, string(key))
		case !exists:
			plan.Put = append(plan.Put, ZoneSet{RecordSet: d.Clone(), Origin: mine})
			rep.Applied = append(rep.Applied, string(key))
		case cur.Origin == mine:
			if !cur.SameContent(d) {
				plan.Put = append(plan.Put, ZoneSet{RecordSet: d.Clone(), Origin: mine})
			}
			rep.Applied = append(rep.Applied, string(key))
		case cur.Origin.Kind == OriginSyncGroup:
			other := SyncGroupRef{ID: cur.Origin.ID, Priority: int(^uint(0) >> 1)}
			if p, ok := zone.GroupPriority[cur.Origin.ID]; ok {
				other.Priority = p
			}
			if other.outranks(g) {
				rep.SkippedPriority = append(rep.SkippedPriority, string(key))
				continue
			}
			plan.Put = append(plan.Put, ZoneSet{RecordSet: d.Clone(), Origin: mine})
			rep.Applied = append(rep.Applied, string(key))
		case cur.SameContent(d): // manual, template, source: equal is fine
			rep.Applied = append(rep.Applied, string(key))
		default:
			rep.Conflicts = append(rep.Conflicts, string(key))
		}
	}
	sortKeys(rep.Applied)
	sortKeys(rep.SkippedPriority)
	sortKeys(rep.Conflicts)
	if cmp := func(a, b ZoneSet) int { return compareSets(a.RecordSet, b.RecordSet) }; !slices.IsSortedFunc(plan.Put, cmp) {
		slices.SortFunc(plan.Put, cmp)
	}
	slices.SortFunc(plan.Delete, func(a, b SetKey) int { return compareKeys(string(a), string(b)) })
	return plan, rep
}

// clashes reports whether set d cannot live beside foreign sets of the given
// types at its name: a CNAME excludes every other type (RFC 1034 §3.6.2).
// A foreign set of d's own type is not a clash; the key rules decide.
func clashes(d RecordSet, foreignTypes []string) bool {
	for _, t := range foreignTypes {
		if t == d.Type {
			continue
		}
		if t == "CNAME" || d.Type == "CNAME" {
			return true
		}
	}
	return false
}

// sortKeys sorts report keys; desired sets usually arrive sorted from
// NormalizeSets, so the cheap check skips the sort in the common case.
func sortKeys(keys []string) {
	if !slices.IsSortedFunc(keys, compareKeys) {
		slices.SortFunc(keys, compareKeys)
	}
}

func compareKeys(a, b string) int {
	ka, kb := SetKey(a), SetKey(b)
	return compareSets(RecordSet{Name: ka.Name(), Type: ka.Type()}, RecordSet{Name: kb.Name(), Type: kb.Type()})
}
