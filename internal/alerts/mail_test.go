package alerts_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/auth/mail"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

func mailConfig(port int) mail.Config {
	return mail.Config{Host: "127.0.0.1", Port: port, From: "lcm@example.test", Username: "mailer", Password: "from-config-json", TLS: "starttls"}
}

// TestImportMailConfigReplicasRace: replicas starting together on a fresh
// database (two stores on one database, as two lcm-api processes have)
// import config.json's SMTP settings at the same moment: exactly one
// imports, none fails, one system mail channel exists. SQLite and
// PostgreSQL, several rounds.
func TestImportMailConfigReplicasRace(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			for round := range 5 {
				url := db.URL
				if url != "" {
					url = testutil.PostgresURL(t) // a fresh database per round
				}
				dir := t.TempDir() // one master key, as replicas share it
				const replicas = 4
				svcs := make([]*alerts.Service, replicas)
				for i := range svcs {
					svcs[i] = alerts.New(storetest.OpenIn(t, url, dir), alerts.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
					t.Cleanup(svcs[i].Close)
				}
				var wg sync.WaitGroup
				start := make(chan struct{})
				imported := make([]bool, replicas)
				errs := make([]error, replicas)
				for i, svc := range svcs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						imported[i], errs[i] = svc.ImportMailConfig(context.Background(), mailConfig(2525))
					}()
				}
				close(start)
				wg.Wait()
				n := 0
				for i := range svcs {
					if errs[i] != nil {
						t.Fatalf("round %d: replica %d failed: %v", round, i, errs[i])
					}
					if imported[i] {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("round %d: %d replicas imported, want 1", round, n)
				}
				mc, err := svcs[0].SystemMailConfig(context.Background())
				if err != nil || mc.Host != "127.0.0.1" || mc.Password != "from-config-json" {
					t.Fatalf("round %d: system mail %+v %v", round, mc, err)
				}
			}
		})
	}
}

// A user channel that took the system channel's name makes the import
// fail clearly instead of silently doing nothing.
func TestImportMailConfigNameTaken(t *testing.T) {
	e := newEnv(t, "", nil)
	r := newReceiver(t, "name-taken-key")
	e.webhook(t, r, alerts.SystemMailKey)
	_, err := e.svc.ImportMailConfig(context.Background(), mailConfig(2525))
	if !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("err %v, want a conflict", err)
	}
}
