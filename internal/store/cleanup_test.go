package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestPurgeHistory: finished jobs older than the cutoff go with their
// output, as do finished schedule runs; recent jobs, old jobs that never
// finished and unfinished runs stay.
func TestPurgeHistory(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			s, _ := openTest(t, db)
			ctx := context.Background()
			srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: "old", Host: "192.0.2.9", Port: 22,
				Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k"}})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			old, recent := now.AddDate(0, 0, -200), now.AddDate(0, 0, -10)
			job := func(id string, st domain.JobStatus, finished *time.Time) {
				t.Helper()
				row := jobRow{ID: id, Kind: string(domain.JobRefresh), ServerID: srv.ID, Segment: "default", Status: string(st), CreatedAt: old, FinishedAt: finished}
				if err := s.conn(ctx).Create(&row).Error; err != nil {
					t.Fatal(err)
				}
				if err := s.AppendOutput(ctx, []ChunkIn{{JobID: id, OutputChunk: domain.OutputChunk{Seq: 0, Data: []byte("line\n")}},
					{JobID: id, OutputChunk: domain.OutputChunk{Seq: 1, Offset: 5, Data: []byte("more\n")}}}); err != nil {
					t.Fatal(err)
				}
			}
			job("old-done", domain.JobSuccess, &old)
			job("old-failed", domain.JobFailed, &old)
			job("old-pending", domain.JobPending, nil)
			job("recent-done", domain.JobSuccess, &recent)

			g, err := s.CreateGroup(ctx, domain.Group{Name: "web"})
			if err != nil {
				t.Fatal(err)
			}
			sch := autoScheduleRow{ID: uuid.NewString(), GroupID: g.ID, Name: "nightly", Cron: "0 3 * * *", CreatedAt: old, UpdatedAt: old}
			if err := s.conn(ctx).Create(&sch).Error; err != nil {
				t.Fatal(err)
			}
			for i, fin := range []*time.Time{&old, &recent, nil} {
				run := autoRunRow{ID: uuid.NewString(), ScheduleID: sch.ID, GroupID: g.ID, SlotKey: string(rune('a' + i)), Trigger: "cron",
					Status: "success", DueAt: old, FinishedAt: fin, CreatedAt: old}
				if err := s.conn(ctx).Create(&run).Error; err != nil {
					t.Fatal(err)
				}
			}

			c, err := s.PurgeHistory(ctx, now.AddDate(0, 0, -180))
			if err != nil {
				t.Fatal(err)
			}
			if c.Jobs != 2 || c.OutputChunks != 4 || c.ScheduleRuns != 1 {
				t.Fatalf("purged %+v, want 2 jobs, 4 chunks, 1 run", c)
			}
			var left []string
			if err := s.conn(ctx).Model(&jobRow{}).Order("id").Pluck("id", &left).Error; err != nil {
				t.Fatal(err)
			}
			if len(left) != 2 || left[0] != "old-pending" || left[1] != "recent-done" {
				t.Fatalf("jobs left %v", left)
			}
			var chunks int64
			if err := s.conn(ctx).Model(&jobOutputRow{}).Where("job_id IN ?", []string{"old-done", "old-failed"}).Count(&chunks).Error; err != nil || chunks != 0 {
				t.Fatalf("%d output chunks of purged jobs left (%v)", chunks, err)
			}
			var runs int64
			if err := s.conn(ctx).Model(&autoRunRow{}).Count(&runs).Error; err != nil || runs != 2 {
				t.Fatalf("%d runs left (%v), want 2", runs, err)
			}
			if c, err := s.PurgeHistory(ctx, now.AddDate(0, 0, -180)); err != nil || c != (PurgeCounts{}) {
				t.Fatalf("second purge %+v %v, want nothing", c, err)
			}
		})
	}
}
