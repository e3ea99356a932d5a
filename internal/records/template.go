package records

import "slices"

// PlanTemplate decides how template t's sets (normalized for this zone with
// NormalizeSet) are applied to one zone. Applying is a user's one-off
// action, not enforcement: nothing is ever deleted and priorities play no
// part, so SkippedPriority stays empty. For each set, against the set with
// the same key in the zone:
//
//   - a CNAME beside other data at the name, in either direction → conflicts
//   - none there → created with origin template(t), applied
//   - same content, any origin → applied, left alone
//   - from template t, other content → replaced (re-applying an edited
//     template updates its sets), applied
//   - any other origin, other content → conflicts; never overwritten
//
// Applying the same template twice gives an empty plan the second time.
func PlanTemplate(templateID string, desired []RecordSet, zone ZoneState) (Plan, Report) {
	plan := Plan{ZoneID: zone.ZoneID}
	rep := Report{ZoneID: zone.ZoneID, Applied: []string{}, SkippedPriority: []string{}, Conflicts: []string{}}
	mine := FromTemplate(templateID)
	current := make(map[SetKey]ZoneSet, len(zone.Sets))
	types := make(map[string][]string)
	for _, s := range zone.Sets {
		current[s.Key()] = s
		types[s.Name] = append(types[s.Name], s.Type)
	}
	for _, d := range desired {
		key := d.Key()
		cur, exists := current[key]
		switch {
		case clashes(d, types[d.Name]):
			rep.Conflicts = append(rep.Conflicts, string(key))
		case !exists:
			plan.Put = append(plan.Put, ZoneSet{RecordSet: d.Clone(), Origin: mine})
			rep.Applied = append(rep.Applied, string(key))
		case cur.SameContent(d):
			rep.Applied = append(rep.Applied, string(key))
		case cur.Origin == mine:
			plan.Put = append(plan.Put, ZoneSet{RecordSet: d.Clone(), Origin: mine})
			rep.Applied = append(rep.Applied, string(key))
		default:
			rep.Conflicts = append(rep.Conflicts, string(key))
		}
	}
	sortKeys(rep.Applied)
	sortKeys(rep.Conflicts)
	slices.SortFunc(plan.Put, func(a, b ZoneSet) int { return compareSets(a.RecordSet, b.RecordSet) })
	return plan, rep
}

// SortKeys sorts report keys ("name type") the way reports are sorted: by
// name in DNS order, then by type.
func SortKeys(keys []string) { sortKeys(keys) }
