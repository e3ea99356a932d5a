// Package alerts evaluates alert rules over the fleet and notifies through
// notification channels (internal/notify). The leader evaluates every 30
// minutes (schedule task "alert_check"); events that change the answer (a
// job finished, a server became unreachable, a scan stored findings) call
// Trigger, which evaluates at once on the replica that saw them. Opening,
// repeating and resolving an alert are conditional writes (store
// RecordTransition), so replicas evaluating together notify once.
//
//	(none) ──condition true──▶ open ──condition false──▶ (none)
//	         firing event        │   resolved event
//	                             └─still true after cooldown: repeat event
//
// Deliveries run asynchronously from the alert_deliveries table, which is
// their queue (deliver.go): a pump claims due rows per channel for that
// channel's perChannel workers, with retries and backoff, so a slow or
// dead receiver delays neither the evaluation nor other channels, and a
// waiting delivery costs a row, not a goroutine.
package alerts

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/store"
)

// Options configure a Service.
type Options struct {
	Log *slog.Logger
	// Backoff is the wait before each retry; a delivery is given up after
	// len(Backoff)+1 attempts. Nil: DefaultBackoff.
	Backoff []time.Duration
	// Fleet reports the fleet-wide facts (vulnerability database age, last
	// system backup). Nil: unknown, those rules never fire.
	Fleet func(ctx context.Context) (FleetState, error)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Debounce groups triggers arriving together into one evaluation
	// (0: DefaultDebounce).
	Debounce time.Duration
	// Poll is how often the delivery pump looks for due deliveries
	// besides being woken (0: DefaultPoll).
	Poll time.Duration
}

// DefaultBackoff: the first retry soon (a restarting receiver), then
// longer waits; five attempts over about 45 minutes, then given up.
var DefaultBackoff = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute}

// DefaultDebounce: a fleet refresh finishes hundreds of jobs within
// seconds; one evaluation after them is enough.
const DefaultDebounce = 2 * time.Second

// Service is the alerts area.
type Service struct {
	store *store.Store
	log   *slog.Logger
	o     Options
	now   func() time.Time

	trigger chan struct{}
	evalMu  sync.Mutex // one evaluation at a time per replica

	trendMu sync.Mutex // guards trends
	trends  trendCache

	ctx    context.Context // deliveries' lifetime; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the pump and the lanes' workers

	pumpWake chan struct{}
	laneMu   sync.Mutex
	lanes    map[string]*lane // by channel id
	// retryTimer wakes the pump at the earliest retry of this replica
	// (retryDue); retryMu guards both.
	retryMu    sync.Mutex
	retryTimer *time.Timer
	retryDue   time.Time
}

// New returns the service. Close stops its deliveries.
func New(st *store.Store, o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	now := o.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{store: st, log: o.Log, o: o, now: now, trigger: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
		pumpWake: make(chan struct{}, 1), lanes: map[string]*lane{}}
	s.wg.Add(1)
	go s.pump()
	return s
}

// Close stops the deliveries (attempts in flight are abandoned; their
// leases run out and a replica makes them again) and waits for the pump
// and the workers to end.
func (s *Service) Close() {
	s.cancel()
	s.retryMu.Lock()
	if s.retryTimer != nil {
		s.retryTimer.Stop()
	}
	s.retryMu.Unlock()
	s.wg.Wait()
}

// Trigger asks for an evaluation soon (event hooks); it never blocks.
func (s *Service) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Run serves triggers until ctx ends: each burst of triggers is one
// evaluation after Debounce.
func (s *Service) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.trigger:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.o.Debounce):
		}
		if _, err := s.Evaluate(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("alert evaluation after an event failed", "err", err)
		}
	}
}
