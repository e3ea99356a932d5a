package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/advisories"
	"github.com/lcmproject/lcm/internal/advisories/advisoriestest"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// startAdvisories returns an early warning over a fake OSV source that
// publishes the real DSA-5724-1; the source is set, the early warning is
// off (as after installation).
func startAdvisories(t *testing.T, st *store.Store) (*advisories.Service, *advisoriestest.Source) {
	t.Helper()
	src := advisoriestest.New(t)
	src.Publish(t, "Debian", "DSA-5724-1")
	svc := advisories.New(st, advisories.Options{Log: quietLog, MirrorDir: t.TempDir(), Lookback: 20 * 365 * 24 * time.Hour})
	u := src.URL()
	sys := &domain.Principal{UserID: "admin", Username: "admin", Roles: []string{domain.RoleAdmin}}
	if _, err := svc.UpdateSettings(context.Background(), sys, advisories.SettingsInput{BaseURL: &u}); err != nil {
		t.Fatal(err)
	}
	return svc, src
}
