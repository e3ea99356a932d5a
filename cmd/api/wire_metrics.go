package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lcmproject/lcm/internal/metrics"
)

// wireMetrics adds the figures read at scrape time (active jobs by state
// and kind, the job streams' consumer backlogs) and starts the metrics
// listener when metrics_port is set (docs/metrics.md).
func (a *app) wireMetrics(ctx context.Context) error {
	metrics.GaugeFunc("lcm_jobs_active", "Jobs not yet final, by status (pending, started, running) and kind.",
		[]string{"status", "kind"}, 2*time.Second, a.log, func(ctx context.Context) ([]metrics.Gauge, error) {
			counts, err := a.store.ActiveJobCounts(ctx)
			if err != nil {
				return nil, err
			}
			out := make([]metrics.Gauge, 0, len(counts))
			for _, c := range counts {
				out = append(out, metrics.Gauge{Labels: []string{c.Status, c.Kind}, Value: float64(c.Count)})
			}
			return out, nil
		})
	backlog := func(ack bool) func(ctx context.Context) ([]metrics.Gauge, error) {
		return func(ctx context.Context) ([]metrics.Gauge, error) {
			bl, err := a.bus.ConsumerBacklogs(ctx)
			if err != nil {
				return nil, err
			}
			out := make([]metrics.Gauge, 0, len(bl))
			for _, b := range bl {
				v := b.Pending
				if ack {
					v = b.AckPending
				}
				out = append(out, metrics.Gauge{Labels: []string{b.Stream, b.Consumer}, Value: float64(v)})
			}
			return out, nil
		}
	}
	metrics.GaugeFunc("lcm_nats_consumer_pending_messages", "Messages of the job streams not yet delivered to a consumer (the ingest's lag behind the workers, the workers' queue).",
		[]string{"stream", "consumer"}, 2*time.Second, a.log, backlog(false))
	metrics.GaugeFunc("lcm_nats_consumer_ack_pending_messages", "Messages of the job streams delivered but not yet acknowledged.",
		[]string{"stream", "consumer"}, 2*time.Second, a.log, backlog(true))
	if a.cfg.MetricsPort == 0 {
		return nil
	}
	addr := net.JoinHostPort(a.cfg.MetricsHost, strconv.Itoa(a.cfg.MetricsPort))
	if _, err := metrics.Serve(ctx, addr, a.log, nil, metrics.WithPprof(a.cfg.MetricsPprof)); err != nil {
		return fmt.Errorf("metrics listener on %s: %w", addr, err)
	}
	return nil
}
