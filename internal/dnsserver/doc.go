// Package dnsserver is LCM's embedded authoritative DNS listener. It answers
// over UDP and TCP for every zone in an immutable Snapshot, which the
// records service rebuilds and swaps in atomically after each change, so a
// query never sees half an update and never takes a lock.
//
// Answering rules (docs/records.md has the full list): AA on authoritative
// answers; NXDOMAIN and NODATA with the zone's SOA in the authority section
// (empty non-terminals are NODATA); CNAMEs answer every type and are chased
// inside their zone; wildcards are synthesised (RFC 4592); names below an NS
// set get a referral; names outside every zone are REFUSED; ANY gets one
// RRset (RFC 8482); AXFR only over TCP and only to allowed addresses; EDNS0
// with truncation of UDP answers that do not fit.
package dnsserver
