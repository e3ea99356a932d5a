package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

// BenchmarkRotate100k re-encrypts 100,000 registered fields (budget ≤ 30 s
// on SQLite and on PostgreSQL):
//
//	go test ./internal/store -run '^$' -bench Rotate100k -benchtime 1x
func BenchmarkRotate100k(b *testing.B) {
	for _, db := range testutil.Databases(b) {
		b.Run(db.Name, func(b *testing.B) {
			ctx := context.Background()
			s, dir := openTest(b, db)
			err := s.InTx(ctx, func(tx *Store) error {
				rows := make([]certificateRow, 0, 1000)
				for i := 0; i < 100000; i++ {
					rows = append(rows, certificateRow{Name: fmt.Sprintf("c%06d", i), CertPEM: "c", KeyPEM: fmt.Sprintf("console output sized secret %d", i)})
					if len(rows) == cap(rows) {
						if err := tx.conn(ctx).CreateInBatches(rows, 500).Error; err != nil {
							return err
						}
						rows = rows[:0]
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				st, err := s.RotateMasterKey(ctx, dir)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(st.Duration.Seconds(), "s/rotation")
				b.ReportMetric(float64(st.Fields), "fields")
			}
		})
	}
}
