package records

import (
	"fmt"
	"slices"

	"github.com/lcmproject/lcm/internal/domain"
)

// SourceSets validates a source host's addresses and returns them as
// canonical A and AAAA record values, sorted and deduplicated (a source may
// list an address twice; unlike a record set that is not an error because
// the lists are usually fed by automation). IPv4-mapped IPv6 addresses are
// refused in ipv6. Both results are non-nil.
func SourceSets(ipv4, ipv6 []string) (a, aaaa []string, err error) {
	if a, err = sourceAddrs("ipv4", "A", ipv4); err != nil {
		return nil, nil, err
	}
	if aaaa, err = sourceAddrs("ipv6", "AAAA", ipv6); err != nil {
		return nil, nil, err
	}
	return a, aaaa, nil
}

func sourceAddrs(field, typ string, in []string) ([]string, error) {
	if len(in) > MaxRecordsPerSet {
		return nil, domain.Invalid("too_many_addresses",
			fmt.Sprintf("%s: %d addresses, at most %d allowed", field, len(in), MaxRecordsPerSet))
	}
	out := make([]string, 0, len(in))
	for i, s := range in {
		c, err := canonicalAddr(typ, s)
		if err != nil {
			return nil, domain.Invalid("invalid_"+field, fmt.Sprintf("%s[%d]: %v", field, i, err))
		}
		out = append(out, c)
	}
	// Records of normalized sets sort as strings; use the same order so a
	// propagated set compares equal to the same set normalized by hand.
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Propagate applies a source host's new addresses (from SourceSets) to the
// zone sets bound to it and returns only the sets whose records change:
// A sets get a, AAAA sets get aaaa. A bound set whose family has no address
// gets an empty record list: it stays bound (and reappears when the source
// gets an address again) but is neither served nor exported, so the name
// answers NODATA or NXDOMAIN in the meantime. Sets not bound to sourceID
// and bound sets of other types are ignored.
func Propagate(sourceID string, a, aaaa []string, sets []ZoneSet) []ZoneSet {
	var changed []ZoneSet
	for _, s := range sets {
		if s.Origin != FromSource(sourceID) {
			continue
		}
		var recs []string
		switch s.Type {
		case "A":
			recs = a
		case "AAAA":
			recs = aaaa
		default:
			continue
		}
		if slices.Equal(s.Records, recs) {
			continue
		}
		n := s
		n.RecordSet = s.RecordSet.Clone()
		n.Records = slices.Clone(recs)
		if n.Records == nil {
			n.Records = []string{}
		}
		changed = append(changed, n)
	}
	return changed
}
