package records

import "time"

// NextSerial returns the SOA serial to use after old changes at now. It is
// date based, YYYYMMDDnn (the RFC 1912 §2.2 convention) when that is larger
// than old, and old+1 otherwise — on the 100th change of a day, or when old
// is already ahead of the date. The +1 wraps at 2^32, which RFC 1982 serial
// arithmetic still counts as an increase, so secondaries always see a newer
// zone.
func NextSerial(old uint32, now time.Time) uint32 {
	y, m, d := now.UTC().Date()
	dated := uint32(y)*1000000 + uint32(m)*10000 + uint32(d)*100
	// The date wins only when it is ahead of old in RFC 1982 terms too.
	if dated > old && dated-old < 1<<31 {
		return dated
	}
	return old + 1
}
