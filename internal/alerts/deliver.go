package alerts

import (
	"context"
	"errors"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/notify"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// Delivery: the alert_deliveries table is the queue. An evaluation stores
// one pending row per event and channel (store.RecordTransitions) and
// wakes the pump; nothing else holds a waiting delivery: no goroutine, no
// timer, no lease write while it waits.
//
//	pending ──claim (lease)──▶ attempt ──ok──▶ sent
//	   ▲                          │
//	   │                          ├─failed, attempts ≤ len(Backoff): retrying, next attempt after the backoff
//	   └──── due again ◀──────────┘
//	                              └─failed otherwise, or the channel is gone: given_up
//
// The pump (one goroutine per replica) claims due rows per channel, at
// most lane capacity at a time, and hands them to that channel's workers
// (perChannel goroutines, started with the channel's first delivery). So
// thousands of alerts for one dead receiver cost perChannel goroutines and
// perChannel attempts at a time, and another channel's deliveries are
// claimed from their own rows, never behind them. A claim moves the row's
// next attempt to now+leaseFor, conditionally, so of several replicas one
// takes each delivery; a replica that stops mid-attempt leaves the lease
// to run out, and the row is due again for any replica.

// perChannel bounds the concurrent attempts per channel on a replica, so
// one slow receiver holds at most this many workers and never blocks other
// channels.
const perChannel = 4

// laneDepth is how many claimed deliveries may wait in a channel's lane
// for a free worker (on top of the attempts running): enough to keep the
// workers busy between pump rounds, few enough that their leases never run
// out while they wait (laneDepth/perChannel attempts of at most a send
// timeout each, far below leaseFor).
const laneDepth = 2 * perChannel

// leaseFor is how long a claimed delivery belongs to its replica: longer
// than an attempt (notify's timeouts are 10–20 s) and its wait in the
// lane; a replica that stopped gives it up to the others after this.
const leaseFor = 2 * time.Minute

// DefaultPoll is how often the pump looks for due deliveries besides being
// woken (new deliveries of this replica, a finished attempt): retries
// become due on their own, and other replicas' expired leases too. Why
// 5 s: the shortest backoff is 30 s, so a retry is late by at most a
// sixth of it, for one small indexed query per replica every 5 s.
const DefaultPoll = 5 * time.Second

// lane is one channel's workers and the deliveries claimed for them.
type lane struct {
	channelID string
	work      chan store.AlertDelivery
	inFlight  int  // claimed and not finished (queued or attempting); under Service.laneMu
	claiming  bool // a claim for this lane runs; under Service.laneMu
}

// wake asks the pump for a round now; it never blocks.
func (s *Service) wake() {
	select {
	case s.pumpWake <- struct{}{}:
	default:
	}
}

// pump claims due deliveries until the service closes.
func (s *Service) pump() {
	defer s.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.pumpWake:
		}
		// A panic ends this round (recovered and counted); the pump goes on.
		safe.Do("alert delivery pump", s.claimRound)
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(s.o.Poll)
	}
}

// claimRound claims, for every channel, as many due deliveries as its lane
// has room for (a lane's workers start with its first delivery).
func (s *Service) claimRound() {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	now := s.now()
	chans, err := s.store.ChannelIDs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("reading the notification channels failed", "err", err)
		}
		return
	}
	for _, id := range chans {
		if err := s.fill(ctx, id, now, 1); err != nil {
			return
		}
	}
}

// fill claims due deliveries of a channel into its lane when at least
// min places are free; one claim per lane at a time. A lane (and its
// workers) is made when the channel has its first due delivery.
func (s *Service) fill(ctx context.Context, channelID string, now time.Time, min int) error {
	s.laneMu.Lock()
	l := s.lanes[channelID]
	free := perChannel + laneDepth
	if l != nil {
		free = cap(l.work) - l.inFlight
		if free < min || l.claiming {
			s.laneMu.Unlock()
			return nil
		}
		l.claiming = true
		defer func() { // also after a panic: the lane must not stay claimed
			s.laneMu.Lock()
			l.claiming = false
			s.laneMu.Unlock()
		}()
	}
	s.laneMu.Unlock()
	ds, err := s.store.ClaimDueDeliveries(ctx, channelID, now, now.Add(leaseFor), free)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("claiming alert deliveries failed", "channel_id", channelID, "err", err)
		}
		return err
	}
	if len(ds) == 0 {
		return nil
	}
	if l == nil {
		l = s.startLane(channelID)
	}
	s.laneMu.Lock()
	l.inFlight += len(ds)
	s.laneMu.Unlock()
	for _, d := range ds {
		l.work <- d // room was reserved: never blocks
	}
	return nil
}

// startLane makes a channel's lane and starts its workers (the pump alone
// makes lanes, so there is one per channel).
func (s *Service) startLane(channelID string) *lane {
	s.laneMu.Lock()
	defer s.laneMu.Unlock()
	if l := s.lanes[channelID]; l != nil {
		return l
	}
	l := &lane{channelID: channelID, work: make(chan store.AlertDelivery, perChannel+laneDepth)}
	s.lanes[channelID] = l
	for range perChannel {
		s.wg.Add(1)
		go s.worker(l)
	}
	return l
}

// worker makes the attempts of one channel's lane.
func (s *Service) worker(l *lane) {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case d := <-l.work:
			// A panic ends this attempt (recovered and counted); the lease
			// runs out and the delivery is claimed again.
			safe.Do("alert delivery", func() { s.deliver(d) })
			s.laneMu.Lock()
			l.inFlight--
			s.laneMu.Unlock()
			// Refill this lane from its own due rows once perChannel
			// places are free: claims in batches, one indexed read each.
			_ = s.fill(s.ctx, l.channelID, s.now(), perChannel)
		}
	}
}

// deliver makes one attempt of a claimed delivery and stores its outcome.
// The channel is read at the attempt (an edit applies, a deleted or
// disabled channel gives up).
func (s *Service) deliver(d store.AlertDelivery) {
	ctx := s.ctx
	ev, err := s.store.GetAlertEvent(ctx, d.EventID)
	switch {
	case err == nil:
	case errors.Is(err, domain.ErrNotFound):
		d.Status, d.NextAttemptAt, d.LastError = store.DeliveryGivenUp, nil, "the alert event is gone"
		s.saveDelivery(d)
		return
	default:
		if ctx.Err() == nil {
			s.log.Warn("reading an alert event failed; the delivery is retried when its lease runs out", "delivery", d.ID, "err", err)
		}
		return // the lease runs out and a replica claims it again
	}
	answer, err := s.attempt(ctx, d.ChannelID, messageOf(ev))
	if ctx.Err() != nil {
		return // shutting down mid-attempt: as above
	}
	d.Attempts++
	d.Response = answer
	if err == nil {
		d.Status, d.LastError, d.NextAttemptAt = store.DeliverySent, "", nil
		s.saveDelivery(d)
		return
	}
	d.LastError = err.Error()
	if d.Attempts > len(s.o.Backoff) || errors.Is(err, errChannelGone) {
		d.Status, d.NextAttemptAt = store.DeliveryGivenUp, nil
		s.log.Warn("alert delivery given up", "channel", d.ChannelName, "event_id", d.EventID, "attempts", d.Attempts, "err", d.LastError)
		s.saveDelivery(d)
		return
	}
	wait := s.o.Backoff[d.Attempts-1]
	next := s.now().Add(wait)
	d.Status, d.NextAttemptAt = store.DeliveryRetrying, &next
	s.log.Info("alert delivery failed, retrying", "channel", d.ChannelName, "event_id", d.EventID, "attempt", d.Attempts, "in", wait.String(), "err", d.LastError)
	s.saveDelivery(d)
	s.retryAt(wait)
}

// retryAt wakes the pump when a retry of this replica falls due, so a
// backoff shorter than the poll is kept. One timer for all retries: it is
// moved only to an earlier time; a later retry is found by the round that
// timer starts or by the poll.
func (s *Service) retryAt(wait time.Duration) {
	s.retryMu.Lock()
	defer s.retryMu.Unlock()
	due := time.Now().Add(wait)
	if s.retryTimer != nil && time.Now().Before(s.retryDue) && !due.Before(s.retryDue) {
		return
	}
	if s.retryTimer != nil {
		s.retryTimer.Stop()
	}
	s.retryDue = due
	s.retryTimer = time.AfterFunc(wait, s.wake)
}

var errChannelGone = errors.New("the channel was deleted or disabled")

func (s *Service) attempt(ctx context.Context, channelID string, m notify.Message) (string, error) {
	c, err := s.store.GetChannel(ctx, channelID)
	if err != nil {
		return "", errChannelGone
	}
	if !c.Enabled {
		return "", errChannelGone
	}
	d, err := decode(c)
	if err != nil {
		return "", err
	}
	res, err := notify.Send(ctx, c.Type, d.cfg, d.sec, m)
	if err != nil {
		return scrub(res.Answer, d.sec), errors.New(scrub(err.Error(), d.sec))
	}
	return scrub(res.Answer, d.sec), nil
}

func (s *Service) saveDelivery(d store.AlertDelivery) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.store.UpdateDelivery(ctx, d); err != nil {
		s.log.Warn("storing an alert delivery failed", "delivery", d.ID, "err", err)
	}
}
