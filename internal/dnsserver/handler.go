package dnsserver

import (
	"net"

	"github.com/miekg/dns"

	"github.com/lcmproject/lcm/internal/safe"
)

// serveRecovered answers one query in the goroutine miekg/dns started for
// it: a panic is recovered, logged and counted (health monitor) and the
// client gets SERVFAIL instead of the process ending.
func (s *Server) serveRecovered(w dns.ResponseWriter, req *dns.Msg) {
	defer func() {
		if v := recover(); v != nil {
			safe.Report("dns query", v, "remote", w.RemoteAddr().String())
			m := new(dns.Msg)
			m.SetRcode(req, dns.RcodeServerFailure)
			_ = w.WriteMsg(m)
		}
	}()
	s.serveDNS(w, req)
}

// serveDNS answers one request. Transfers go to serveTransfer; everything
// else is answered from the current snapshot in one pass.
func (s *Server) serveDNS(w dns.ResponseWriter, req *dns.Msg) {
	_, isTCP := w.RemoteAddr().(*net.TCPAddr)
	m := new(dns.Msg)
	m.SetReply(req)
	m.Compress = true
	m.RecursionAvailable = false

	opt := req.IsEdns0()
	switch {
	case opt != nil && opt.Version() != 0:
		m.Rcode = dns.RcodeBadVers // RFC 6891 §6.1.3
	case req.Opcode != dns.OpcodeQuery:
		m.Rcode = dns.RcodeNotImplemented
	case len(req.Question) != 1:
		m.Rcode = dns.RcodeFormatError
	default:
		q := req.Question[0]
		switch {
		case q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY:
			m.Rcode = dns.RcodeRefused
		case q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR:
			if isTCP && s.transferAllowed(w.RemoteAddr()) && s.serveTransfer(w, req) {
				return
			}
			m.Rcode = dns.RcodeRefused
		default:
			s.snap.Load().answer(m, lowerName(q.Name), q.Qtype)
		}
	}
	if opt != nil {
		m.SetEdns0(ednsUDPSize, false)
	}
	if !isTCP {
		m.Truncate(udpLimit(opt))
	}
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("dns write failed", "err", err)
	}
}

// udpLimit is the largest UDP answer for a request: 512 without EDNS
// (RFC 1035), otherwise the client's size capped at ednsUDPSize.
func udpLimit(opt *dns.OPT) int {
	if opt == nil {
		return dns.MinMsgSize
	}
	return max(dns.MinMsgSize, min(int(opt.UDPSize()), ednsUDPSize))
}

// transferAllowed reports whether the client address is in the allowlist.
func (s *Server) transferAllowed(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip := ta.AddrPort().Addr().Unmap()
	for _, p := range s.cfg.AXFRAllow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// serveTransfer streams a full zone (RFC 5936): SOA, the records in
// chunks, SOA. IXFR gets the same full transfer, which RFC 1995 §4 allows.
// It returns false without writing when the name is not a zone apex.
func (s *Server) serveTransfer(w dns.ResponseWriter, req *dns.Msg) bool {
	z := s.snap.Load().zones[lowerName(req.Question[0].Name)]
	if z == nil {
		return false
	}
	msgs := make([][]dns.RR, 0, len(z.axfr)+2)
	msgs = append(msgs, []dns.RR{z.soa})
	msgs = append(msgs, z.axfr...)
	msgs = append(msgs, []dns.RR{z.soa})
	for _, rrs := range msgs {
		m := new(dns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		m.Compress = true
		m.Answer = rrs
		if err := w.WriteMsg(m); err != nil {
			s.log.Warn("axfr write failed", "zone", z.origin, "err", err)
			break
		}
	}
	return true
}
