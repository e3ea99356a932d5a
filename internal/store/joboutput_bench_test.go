package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// BenchmarkAppendOutputSmallChunks: one ingest batch of 500 small chunks
// from 100 running jobs (what a fleet-wide run's console output is), on
// SQLite and PostgreSQL.
//
//	go test -run '^$' -bench AppendOutputSmallChunks ./internal/store
func BenchmarkAppendOutputSmallChunks(b *testing.B) {
	for _, db := range testutil.Databases(b) {
		s, _ := openTest(b, db)
		ctx := context.Background()
		srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: "s", Host: "h", Port: 22, HostKey: "k"}})
		if err != nil {
			b.Fatal(err)
		}
		round := 0
		b.Run(db.Name, func(b *testing.B) {
			line := []byte("Unpacking libssl3:amd64 (3.0.15-1~deb12u1) over (3.0.14-1~deb12u2) ...\n")
			b.ResetTimer()
			for it := range b.N {
				b.StopTimer()
				var chunks []ChunkIn
				for j := range 100 {
					id := fmt.Sprintf("job-%d-%d-%d", round, it, j)
					if err := s.CreateJob(ctx, domain.Job{ID: id, Kind: domain.JobUpgradeSecurity, ServerID: srv.ID, Segment: "default", Status: domain.JobRunning}); err != nil {
						b.Fatal(err)
					}
					for k := range 5 {
						chunks = append(chunks, ChunkIn{JobID: id, OutputChunk: domain.OutputChunk{Seq: int64(k), Offset: int64(k * len(line)), Data: line}})
					}
				}
				b.StartTimer()
				if err := s.AppendOutput(ctx, chunks); err != nil {
					b.Fatal(err)
				}
			}
			round++
		})
	}
}
