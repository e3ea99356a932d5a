package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/dnsserver"
	"github.com/lcmproject/lcm/internal/recordsvc"
	"github.com/lcmproject/lcm/internal/safe"
)

// dnsSyncZones is the most zones a change may touch for the DNS rebuild to
// run before the API answers (so dig sees it at once). Bulk changes — a
// sync group or source spanning hundreds of zones — rebuild in the
// background instead: rebuilding 1,000 zones × 20 sets costs about as much
// again as the write itself and would break the 2 s budget of the call.
const dnsSyncZones = 100

// wireRecords builds the records service and, when dns.listen is set, the
// embedded authoritative DNS listener: every stored zone is loaded before
// the listener starts, each committed change rebuilds the zones it touched
// (before the API answers, unless it touched more than dnsSyncZones), and is announced on SubjectRecordsChanged so the
// listeners of the other replicas rebuild them too. The listener stops
// when ctx ends.
func (a *app) wireRecords(ctx context.Context) (*recordsvc.Service, error) {
	svc := recordsvc.New(a.store)
	replica := uuid.NewString()
	if a.cfg.DNS.Listen != "" {
		allow, err := parsePrefixes(a.cfg.DNS.AXFRAllow)
		if err != nil {
			return nil, err
		}
		srv := dnsserver.New(dnsserver.Config{Addr: a.cfg.DNS.Listen, AXFRAllow: allow, Logger: a.log})
		sync := recordsvc.NewDNS(a.store, srv, a.log)
		if err := sync.Load(ctx); err != nil {
			return nil, fmt.Errorf("DNS listener: load zones: %w", err)
		}
		if err := srv.Start(ctx); err != nil {
			return nil, fmt.Errorf("DNS listener on %s (dns.listen): %w", a.cfg.DNS.Listen, err)
		}
		refresh := func(ctx context.Context, ids []string) {
			defer safe.Recover("dns zone rebuild")
			if err := sync.Refresh(ctx, ids); err != nil {
				a.log.Error("DNS zones not rebuilt", "zones", len(ids), "err", err)
			}
		}
		svc.OnChange(func(ctx context.Context, ids []string) {
			if len(ids) > dnsSyncZones {
				go refresh(context.WithoutCancel(ctx), ids)
				return
			}
			refresh(context.WithoutCancel(ctx), ids)
		})
		stop, err := a.bus.Subscribe(bus.SubjectRecordsChanged, func(_ string, data []byte) {
			var m bus.RecordsChanged
			if err := json.Unmarshal(data, &m); err != nil || m.Type != bus.RecordsChangedType || m.Replica == replica {
				return
			}
			refresh(ctx, m.ZoneIDs)
		})
		if err != nil {
			return nil, err
		}
		go func() { <-ctx.Done(); stop() }()
		svc.SetListener(srv, allow)
		a.log.Info("DNS listener started", "addr", srv.Addr(), "zones", len(srv.Current().Zones()))
	}
	svc.OnChange(func(_ context.Context, ids []string) {
		data, _ := json.Marshal(bus.RecordsChanged{Type: bus.RecordsChangedType, V: bus.RecordsChangedVersion,
			Replica: replica, ZoneIDs: ids})
		if err := a.bus.Notify(bus.SubjectRecordsChanged, data); err != nil {
			a.log.Warn("records change not announced to other replicas", "err", err)
		}
	})
	return svc, nil
}

// parsePrefixes reads dns.axfr_allow: networks ("10.0.0.0/8") or single
// addresses ("192.0.2.53").
func parsePrefixes(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for _, s := range in {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("dns.axfr_allow: %q is neither an address nor a network", s)
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
	}
	return out, nil
}
