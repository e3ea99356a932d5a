// Package records is the pure core of LCM's DNS area: record sets and their
// origins, validation and canonicalisation of record values (with
// github.com/miekg/dns), sync-group enforcement planning, source-host
// propagation, zone serials and RFC 1035 zone-file export.
//
// Nothing here touches a database, the network or a clock it was not given:
// the records service loads state, calls these functions inside one
// transaction and writes the returned plans. docs/records.md describes the
// semantics in full.
package records
