package inventory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// decodeGroup is the jobs whose refresh data is decoded at once while the
// previous group is stored: decoding (gunzip and JSON of 1,500 packages)
// costs about as much CPU as storing, so the two overlap on two cores.
const decodeGroup = 25

// IngestJobs stores the refresh data that finished jobs carry (refresh,
// package action, security upgrade): the batch finish hook cmd/api
// registers for those kinds. Jobs without data (they failed before the
// refresh ran) are skipped. It returns one error per job, in order.
func (s *Service) IngestJobs(ctx context.Context, jobs []domain.Job) []error {
	errs := make([]error, len(jobs))
	// Storers: on PostgreSQL two groups are stored at once, on two
	// connections, so the database works on two cores while this waits on
	// it; SQLite has one writer, a second would only wait for it.
	storers := 1
	if s.store.Dialect() == store.Postgres {
		storers = 2
	}
	type group struct {
		lo   int
		data []actions.RefreshData
		errs []error
	}
	groups := make(chan group, storers)
	go func() {
		defer close(groups)
		defer safe.Recover("inventory decode")
		for lo := 0; lo < len(jobs); lo += decodeGroup {
			hi := min(lo+decodeGroup, len(jobs))
			raw := make([][]byte, 0, hi-lo)
			for _, j := range jobs[lo:hi] {
				raw = append(raw, j.Data)
			}
			ds, derrs := actions.DecodeRefreshes(raw)
			select {
			case groups <- group{lo: lo, data: ds, errs: derrs}:
			case <-ctx.Done():
				return
			}
		}
	}()
	handled := make([]bool, len(jobs)) // each storer sets its own groups' elements
	var wg sync.WaitGroup
	for range storers {
		wg.Go(func() {
			for g := range groups {
				var rs []Refresh
				var idx []int // rs[k] is jobs[idx[k]]
				var cs []containers.Collected
				var cidx []int // cs[k] is jobs[cidx[k]]
				for k, d := range g.data {
					i := g.lo + k
					handled[i] = true
					switch {
					case len(jobs[i].Data) == 0:
					case g.errs[k] != nil:
						errs[i] = g.errs[k]
					default:
						rs = append(rs, Refresh{ServerID: jobs[i].ServerID, Facts: d.Facts, Inventory: d.Inventory,
							Unchanged: d.InventoryUnchanged, Digest: d.InventoryDigest})
						idx = append(idx, i)
						if d.Containers != nil {
							cs = append(cs, containers.Collected{ServerID: jobs[i].ServerID, JobID: jobs[i].ID, At: finishedAt(jobs[i]), Inventory: *d.Containers})
							cidx = append(cidx, i)
						}
					}
				}
				for k, err := range s.IngestMany(ctx, rs) {
					errs[idx[k]] = err
				}
				if h := s.containers.Load(); h != nil && len(cs) > 0 {
					for k, err := range (*h)(ctx, cs) {
						if err != nil && errs[cidx[k]] == nil {
							errs[cidx[k]] = fmt.Errorf("container inventory: %w", err)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	for i, ok := range handled {
		if !ok && len(jobs[i].Data) > 0 {
			errs[i] = ctx.Err() // the decoding stopped with ctx
		}
	}
	return errs
}

// finishedAt is when a job ended (its creation if it never recorded one).
func finishedAt(j domain.Job) time.Time {
	if j.FinishedAt != nil {
		return *j.FinishedAt
	}
	return j.CreatedAt
}
