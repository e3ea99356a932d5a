package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/safe"
)

// ErrUnavailable is returned when the bus cannot be reached.
var ErrUnavailable = errors.New("bus: NATS unavailable")

// opTimeout bounds one bus round trip: a healthy NATS answers in
// milliseconds; a longer wait means it is down and the caller should say so.
const opTimeout = 5 * time.Second

func (b *Bus) ready() error {
	if !b.Healthy() {
		return ErrUnavailable
	}
	return nil
}

func unavailable(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return err
}

// Publish publishes data to a stream subject with a de-duplication id and
// waits for the stream's ack.
func (b *Bus) Publish(ctx context.Context, subject, msgID string, data []byte) error {
	if err := b.ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := b.JS.Publish(ctx, subject, data, msgIDOpt(msgID)...)
	return unavailable(err)
}

func msgIDOpt(id string) []jetstream.PublishOpt {
	if id == "" {
		return nil
	}
	return []jetstream.PublishOpt{jetstream.WithMsgID(id)}
}

// PublishAsync publishes to a stream subject without waiting; the returned
// channel yields nil once the stream acked or the error.
func (b *Bus) PublishAsync(subject, msgID string, data []byte) (<-chan error, error) {
	f, err := b.JS.PublishAsync(subject, data, msgIDOpt(msgID)...)
	if err != nil {
		return nil, unavailable(err)
	}
	ch := make(chan error, 1)
	go func() {
		select {
		case <-f.Ok():
			ch <- nil
		case err := <-f.Err():
			ch <- unavailable(err)
		case <-time.After(opTimeout):
			ch <- fmt.Errorf("%w: no ack within %s", ErrUnavailable, opTimeout)
		}
	}()
	return ch, nil
}

// Notify publishes on core NATS (no stream, no ack).
func (b *Bus) Notify(subject string, data []byte) error {
	return unavailable(b.NC.Publish(subject, data))
}

// Request sends a core NATS request and waits for one reply.
func (b *Bus) Request(ctx context.Context, subject string, data []byte, timeout time.Duration) ([]byte, error) {
	if err := b.ready(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := b.NC.RequestWithContext(ctx, subject, data)
	if err != nil {
		return nil, unavailable(err)
	}
	return msg.Data, nil
}

// RequestAll sends a request every responder answers (subscribers without
// a queue group) and collects the replies: it waits up to timeout for the
// first, then gathers more until settle passes without a new one.
func (b *Bus) RequestAll(ctx context.Context, subject string, data []byte, timeout, settle time.Duration) ([][]byte, error) {
	if err := b.ready(); err != nil {
		return nil, err
	}
	inbox := b.NC.NewInbox()
	sub, err := b.NC.SubscribeSync(inbox)
	if err != nil {
		return nil, unavailable(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := b.NC.PublishRequest(subject, inbox, data); err != nil {
		return nil, unavailable(err)
	}
	var out [][]byte
	wait := timeout
	for {
		wctx, cancel := context.WithTimeout(ctx, wait)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if len(out) == 0 {
				return nil, unavailable(err)
			}
			return out, nil
		}
		if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
			return nil, unavailable(nats.ErrNoResponders)
		}
		out = append(out, m.Data)
		wait = settle
	}
}

// Serve answers requests on subject until stop is called; with a queue
// group one member of the group answers each request.
func (b *Bus) Serve(subject, queue string, fn func(data []byte) []byte) (stop func(), err error) {
	sub, err := b.subscribe(subject, queue, func(m *nats.Msg) { respond(m, fn) })
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// subscribe subscribes handler to subject, in queue group queue if set.
func (b *Bus) subscribe(subject, queue string, handler nats.MsgHandler) (*nats.Subscription, error) {
	if queue == "" {
		return b.NC.Subscribe(subject, handler)
	}
	return b.NC.QueueSubscribe(subject, queue, handler)
}

// respond answers m with fn's reply (none when fn returns nil or m wants
// no reply).
func respond(m *nats.Msg, fn func(data []byte) []byte) {
	var reply []byte
	if safe.Do("bus handler "+m.Subject, func() { reply = fn(m.Data) }) {
		return // the requester times out; the panic is logged and counted
	}
	if reply != nil && m.Reply != "" {
		_ = m.Respond(reply)
	}
}

// ServeConcurrently is Serve for handlers that mostly wait (on a
// database): up to n requests are handled at once, each in its own
// goroutine; further ones wait in the subscription. stop unsubscribes and
// waits for the handlers in flight.
func (b *Bus) ServeConcurrently(subject, queue string, n int, fn func(data []byte) []byte) (stop func(), err error) {
	sem := make(chan struct{}, max(n, 1))
	var (
		mu      sync.Mutex // orders wg.Add before stop's wg.Wait
		stopped bool
		wg      sync.WaitGroup
	)
	handler := func(m *nats.Msg) {
		sem <- struct{}{}
		mu.Lock()
		if stopped { // delivered while stop ran
			mu.Unlock()
			<-sem
			return
		}
		wg.Add(1)
		mu.Unlock()
		go func() {
			defer func() { <-sem; wg.Done() }()
			respond(m, fn)
		}()
	}
	sub, err := b.subscribe(subject, queue, handler)
	if err != nil {
		return nil, err
	}
	return func() {
		_ = sub.Unsubscribe()
		mu.Lock()
		stopped = true
		mu.Unlock()
		wg.Wait()
	}, nil
}

// Subscribe delivers every core NATS message on subject (live fan-out: every
// subscriber gets every message) until stop is called.
func (b *Bus) Subscribe(subject string, fn func(subject string, data []byte)) (stop func(), err error) {
	sub, err := b.NC.Subscribe(subject, func(m *nats.Msg) {
		safe.Do("bus subscriber "+subject, func() { fn(m.Subject, m.Data) })
	})
	if err != nil {
		return nil, unavailable(err)
	}
	// A live console can burst megabytes; the default pending limits would
	// drop a slow client's messages silently. Gaps are refilled from the DB.
	_ = sub.SetPendingLimits(-1, 256<<20)
	if err := b.NC.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, unavailable(err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Msg is a JetStream message handed to a consumer.
type Msg interface {
	Subject() string
	Data() []byte
	Ack() error
	// DoubleAck acks and waits for the server to confirm the ack.
	DoubleAck(ctx context.Context) error
	Nak() error
	NakWithDelay(d time.Duration) error
	InProgress() error
	Term() error
}

// Consumer is a durable pull consumer.
type Consumer struct {
	c jetstream.Consumer
}

// JobConsumer opens (creating or updating) the durable consumer of a
// worker segment on the JOBS stream. ackWait is how long a delivered job may
// go without Ack or InProgress before it is redelivered.
func (b *Bus) JobConsumer(ctx context.Context, segment string, ackWait time.Duration, maxAckPending int) (*Consumer, error) {
	c, err := b.JS.CreateOrUpdateConsumer(ctx, StreamJobs, jetstream.ConsumerConfig{
		Durable: WorkerConsumer(segment), FilterSubject: JobSegmentFilter(segment),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: maxAckPending,
		// A job is tried a few times (a worker crashed before claiming it);
		// after a claim, redeliveries are refused by the claim itself.
		MaxDeliver: 5,
	})
	if err != nil {
		return nil, unavailable(fmt.Errorf("bus: consumer %s: %w", WorkerConsumer(segment), err))
	}
	return &Consumer{c: c}, nil
}

// EventConsumer opens the API's durable consumer of JOBEVENTS, shared by
// every replica (each event goes to one of them).
func (b *Bus) EventConsumer(ctx context.Context, ackWait time.Duration) (*Consumer, error) {
	c, err := b.JS.CreateOrUpdateConsumer(ctx, StreamJobEvents, jetstream.ConsumerConfig{
		Durable: ConsumerIngest, FilterSubject: SubjectJobEventsAll,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 20000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, unavailable(fmt.Errorf("bus: consumer %s: %w", ConsumerIngest, err))
	}
	return &Consumer{c: c}, nil
}

// Fetch returns up to n messages: it waits at most maxWait for the first
// one, then takes what is already waiting without waiting again, so a lone
// event is handled at once and a burst in one batch.
func (c *Consumer) Fetch(ctx context.Context, n int, maxWait time.Duration) ([]Msg, error) {
	first, err := c.c.Fetch(1, jetstream.FetchMaxWait(maxWait))
	if err != nil {
		return nil, unavailable(err)
	}
	out, err := collect(first, nil)
	if err != nil || len(out) == 0 || n <= 1 {
		return out, err
	}
	rest, err := c.c.FetchNoWait(n - 1)
	if err != nil {
		return out, nil
	}
	return collect(rest, out)
}

func collect(batch jetstream.MessageBatch, out []Msg) ([]Msg, error) {
	for m := range batch.Messages() {
		out = append(out, jsMsg{m})
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && len(out) == 0 {
		return nil, unavailable(err)
	}
	return out, nil
}

// Messages returns an iterator that keeps up to buffer messages pulled
// ahead; Next blocks until a message arrives. Stop it when done.
func (c *Consumer) Messages(buffer int) (*MsgIter, error) {
	it, err := c.c.Messages(jetstream.PullMaxMessages(buffer))
	if err != nil {
		return nil, unavailable(err)
	}
	return &MsgIter{it: it}, nil
}

// MsgIter iterates a consumer's messages.
type MsgIter struct{ it jetstream.MessagesContext }

// Next blocks for the next message; it fails once Stop was called.
func (i *MsgIter) Next() (Msg, error) {
	m, err := i.it.Next()
	if err != nil {
		return nil, err
	}
	return jsMsg{m}, nil
}

// Stop ends the iteration; a blocked Next returns an error.
func (i *MsgIter) Stop() { i.it.Stop() }

type jsMsg struct{ m jetstream.Msg }

func (m jsMsg) Subject() string                     { return m.m.Subject() }
func (m jsMsg) Data() []byte                        { return m.m.Data() }
func (m jsMsg) Ack() error                          { return m.m.Ack() }
func (m jsMsg) DoubleAck(ctx context.Context) error { return m.m.DoubleAck(ctx) }
func (m jsMsg) Nak() error                          { return m.m.Nak() }
func (m jsMsg) NakWithDelay(d time.Duration) error  { return m.m.NakWithDelay(d) }
func (m jsMsg) InProgress() error                   { return m.m.InProgress() }
func (m jsMsg) Term() error                         { return m.m.Term() }
