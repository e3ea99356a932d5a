package recordsvc

import (
	"context"
	"log/slog"
	"sync"

	"github.com/lcmproject/lcm/internal/dnsserver"
	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/store"
)

// DNS keeps a dnsserver.Server's snapshot in step with the stored zones:
// Load builds every zone, Refresh rebuilds only the zones a write changed
// (the others are shared with the previous snapshot) and drops deleted
// ones. A zone whose stored data does not build is logged and keeps its
// previous data; the rest of the refresh still goes through.
type DNS struct {
	st  *store.Store
	srv *dnsserver.Server
	log *slog.Logger

	mu      sync.Mutex        // serialises rebuilds; guards origins
	origins map[string]string // zone id → origin in the served snapshot
}

// NewDNS returns a DNS syncer for srv.
func NewDNS(st *store.Store, srv *dnsserver.Server, log *slog.Logger) *DNS {
	if log == nil {
		log = slog.Default()
	}
	return &DNS{st: st, srv: srv, log: log, origins: map[string]string{}}
}

// Load builds and serves every stored zone.
func (d *DNS) Load(ctx context.Context) error {
	zones, err := d.st.ListZones(ctx, "")
	if err != nil {
		return err
	}
	ids := make([]string, len(zones))
	for i, z := range zones {
		ids[i] = z.ID
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.srv.Swap(nil)
	d.origins = map[string]string{}
	return d.refresh(ctx, ids, zones)
}

// Refresh rebuilds the given zones from the store (deleted ones stop being
// served) and swaps the new snapshot in.
func (d *DNS) Refresh(ctx context.Context, zoneIDs []string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	zones, err := d.st.ZonesByIDs(ctx, zoneIDs)
	if err != nil {
		return err
	}
	return d.refresh(ctx, zoneIDs, zones)
}

func (d *DNS) refresh(ctx context.Context, ids []string, zones []store.DNSZone) error {
	sets, err := d.st.RecordSetsOfZones(ctx, ids)
	if err != nil {
		return err
	}
	byZone := make(map[string][]records.ZoneSet, len(zones))
	for _, r := range sets {
		byZone[r.ZoneID] = append(byZone[r.ZoneID], zoneSetOf(r))
	}
	present := make(map[string]bool, len(zones))
	put := make([]dnsserver.ZoneInput, 0, len(zones))
	for _, z := range zones {
		present[z.ID] = true
		put = append(put, dnsserver.ZoneInput{Zone: zoneOf(z), Sets: byZone[z.ID]})
	}
	var drop []string
	for _, id := range ids {
		if o, ok := d.origins[id]; ok && !present[id] {
			drop = append(drop, o)
		}
	}
	snap, err := d.srv.Current().Update(put, drop)
	if err != nil {
		// One bad zone must not hold back the others: apply one by one.
		snap = d.srv.Current()
		if s, derr := snap.Update(nil, drop); derr == nil {
			snap = s
		}
		for _, in := range put {
			s, zerr := snap.Update([]dnsserver.ZoneInput{in}, nil)
			if zerr != nil {
				d.log.Error("zone not rebuilt for DNS; serving its previous data", "zone", in.Zone.Name, "zone_id", in.Zone.ID, "err", zerr)
				continue
			}
			snap = s
		}
	}
	d.srv.Swap(snap)
	for _, id := range ids {
		if !present[id] {
			delete(d.origins, id)
		}
	}
	for _, z := range zones {
		d.origins[z.ID] = z.Name
	}
	return nil
}
