package records

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
)

// ZoneFile renders zone z with its sets as an RFC 1035 master file:
// $ORIGIN, $TTL (the zone's default TTL), the SOA, the apex NS set, then
// every other set sorted by name and type, one record per line with owner
// names relative to the origin. Sets without records (source-bound sets
// whose source has no address of their family) are left out. When the zone
// has no apex NS set, one NS record naming the SOA MNAME is written, as the
// DNS listener serves it. Every set is normalized again on the way out, so
// the file never contains a value the parser would read differently.
func ZoneFile(z Zone, sets []ZoneSet) ([]byte, error) {
	z, err := NormalizeZone(z)
	if err != nil {
		return nil, err
	}
	norm, err := ServedSets(z, sets)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "; zone %s, serial %d\n", z.Name, z.Serial)
	fmt.Fprintf(&b, "$ORIGIN %s\n$TTL %d\n", z.Name, z.DefaultTTL)
	fmt.Fprintf(&b, "@\tIN\tSOA\t%s %s %d %d %d %d %d\n",
		z.MName, z.RName, z.Serial, z.Refresh, z.Retry, z.Expire, z.Minimum)
	for _, s := range norm {
		for _, v := range s.Records {
			b.WriteString(s.Name)
			b.WriteByte('\t')
			if s.TTL != nil {
				b.WriteString(strconv.FormatInt(*s.TTL, 10))
			}
			b.WriteString("\tIN\t")
			b.WriteString(s.Type)
			b.WriteByte('\t')
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// ServedSets returns the sets of zone z (already normalized with
// NormalizeZone) as they are published: normalized again, without empty
// sets, with the apex NS set first (synthesised from the SOA MNAME when
// missing) and the rest sorted. The zone file and the DNS listener both
// publish exactly this.
func ServedSets(z Zone, sets []ZoneSet) ([]RecordSet, error) {
	out := make([]RecordSet, 0, len(sets)+1)
	hasNS := false
	for _, s := range sets {
		if len(s.Records) == 0 {
			continue
		}
		n, err := NormalizeSet(z.Name, s.RecordSet)
		if err != nil {
			return nil, err
		}
		hasNS = hasNS || (n.Name == "@" && n.Type == "NS")
		out = append(out, n)
	}
	if !hasNS {
		out = append(out, RecordSet{Name: "@", Type: "NS", Records: []string{z.MName}})
	}
	slices.SortFunc(out, func(a, b RecordSet) int {
		aNS, bNS := a.Name == "@" && a.Type == "NS", b.Name == "@" && b.Type == "NS"
		switch {
		case aNS && !bNS:
			return -1
		case bNS && !aNS:
			return 1
		}
		return compareSets(a, b)
	})
	return out, nil
}
