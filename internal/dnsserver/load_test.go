package dnsserver

import (
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
)

// LoadResult is what one load run measured.
type LoadResult struct {
	Queries  int
	Errors   int
	Duration time.Duration
	QPS      float64
	P50, P99 time.Duration
}

// load sends queries over UDP from the given number of concurrent clients, each with
// its own socket and one query in flight, until total queries were sent or
// maxDur passed. Latency is measured per query from send to receive.
func load(t testing.TB, addr string, clients, total int, maxDur time.Duration) LoadResult {
	t.Helper()
	names := []string{"www.example.com.", "mail.example.com.", "nope.example.com.", "alias.example.com.", "example.com."}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeA, dns.TypeA, dns.TypeMX}
	var sent, errs atomic.Int64
	lat := make([][]time.Duration, clients)
	deadline := time.Now().Add(maxDur)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("udp", addr)
			if err != nil {
				errs.Add(1)
				return
			}
			defer conn.Close()
			buf := make([]byte, 2048)
			for i := 0; ; i++ {
				if n := sent.Add(1); n > int64(total) || time.Now().After(deadline) {
					return
				}
				m := new(dns.Msg)
				m.SetQuestion(names[(c+i)%len(names)], types[(c+i)%len(types)])
				m.Id = uint16(c*7919 + i)
				wire, _ := m.Pack()
				t0 := time.Now()
				_ = conn.SetDeadline(t0.Add(time.Second))
				if _, err := conn.Write(wire); err != nil {
					errs.Add(1)
					continue
				}
				n, err := conn.Read(buf)
				if err != nil || n < 12 || buf[0] != wire[0] || buf[1] != wire[1] {
					errs.Add(1)
					continue
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := LoadResult{Queries: len(all), Errors: int(errs.Load()), Duration: elapsed}
	if len(all) > 0 {
		r.QPS = float64(len(all)) / elapsed.Seconds()
		r.P50 = all[len(all)/2]
		r.P99 = all[len(all)*99/100]
	}
	return r
}

// TestLoadUDP runs a bounded load and logs the figures; it asserts only
// that answers come back. Set LCM_DNS_LOAD_QUERIES to run a longer load.
func TestLoadUDP(t *testing.T) {
	if testing.Short() {
		t.Skip("load run skipped in -short mode")
	}
	s := startServer(t, nil)
	total := 20000
	if v := os.Getenv("LCM_DNS_LOAD_QUERIES"); v != "" {
		var n int
		_, _ = fmt.Sscan(v, &n)
		if n > 0 {
			total = n
		}
	}
	r := load(t, s.Addr(), benchClients(), total, 30*time.Second)
	t.Logf("UDP load: %d queries (%d errors) in %s: %.0f q/s, p50 %s, p99 %s",
		r.Queries, r.Errors, r.Duration.Round(time.Millisecond), r.QPS, r.P50, r.P99)
	require.Greater(t, r.Queries, 0)
}

// BenchmarkServeUDP measures end-to-end UDP throughput and latency on
// loopback with LCM_DNS_CLIENTS concurrent clients (default 4).
func BenchmarkServeUDP(b *testing.B) {
	s := startServer(b, nil)
	b.ResetTimer()
	r := load(b, s.Addr(), benchClients(), b.N, time.Minute)
	b.StopTimer()
	b.ReportMetric(r.QPS, "queries/s")
	b.ReportMetric(float64(r.P99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(r.Errors), "errors")
}

// BenchmarkAnswer measures the in-process answer path without sockets.
func BenchmarkAnswer(b *testing.B) {
	snap, err := NewSnapshot(testZones(b))
	require.NoError(b, err)
	for b.Loop() {
		m := new(dns.Msg)
		snap.answer(m, "alias.example.com.", dns.TypeA)
	}
}

// benchClients reads LCM_DNS_CLIENTS (default 4 concurrent clients).
func benchClients() int {
	n := 4
	if v := os.Getenv("LCM_DNS_CLIENTS"); v != "" {
		_, _ = fmt.Sscan(v, &n)
	}
	return n
}
