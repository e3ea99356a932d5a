package bus

import "context"

// Backlog is what one durable consumer of the job streams has not yet
// handled: messages not yet delivered (Pending) and delivered but not yet
// acknowledged (AckPending).
type Backlog struct {
	Stream, Consumer    string
	Pending, AckPending uint64
}

// ConsumerBacklogs reads the backlog of every consumer of the JOBS and
// JOBEVENTS streams (for the metrics: a growing ingest backlog means the
// database lags the workers).
func (b *Bus) ConsumerBacklogs(ctx context.Context) ([]Backlog, error) {
	var out []Backlog
	for _, name := range []string{StreamJobs, StreamJobEvents} {
		st, err := b.JS.Stream(ctx, name)
		if err != nil {
			return nil, err
		}
		l := st.ListConsumers(ctx)
		for ci := range l.Info() {
			out = append(out, Backlog{Stream: name, Consumer: ci.Name, Pending: ci.NumPending, AckPending: uint64(ci.NumAckPending)})
		}
		if err := l.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
