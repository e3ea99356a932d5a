package portal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

func openStore(t testing.TB, db testutil.DB) *store.Store {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), store.Options{URL: db.URL, DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.Migrate(context.Background()))
	kr, _, err := st.ResolveMasterKey(context.Background(), dir)
	require.NoError(t, err)
	st.SetKeyring(kr)
	return st
}

func at(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func code(t *testing.T, err error) string {
	t.Helper()
	var de *domain.Error
	require.True(t, errors.As(err, &de), "want a domain error, got %v", err)
	return de.Code
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		in   Input
		code string
	}{
		{"ok", Input{Title: "Maintenance"}, ""},
		{"title trimmed to empty", Input{Title: "   "}, CodeInvalidTitle},
		{"title 200 chars", Input{Title: strings.Repeat("ä", 200)}, ""},
		{"title 201 chars", Input{Title: strings.Repeat("ä", 201)}, CodeInvalidTitle},
		{"title newline", Input{Title: "a\nb"}, CodeInvalidTitle},
		{"body 10000", Input{Title: "t", Body: strings.Repeat("x", 10000)}, ""},
		{"body 10001", Input{Title: "t", Body: strings.Repeat("x", 10001)}, CodeInvalidBody},
		{"body NUL", Input{Title: "t", Body: "a\x00b"}, CodeInvalidBody},
		{"severity info", Input{Title: "t", Severity: "info"}, ""},
		{"severity warning", Input{Title: "t", Severity: "warning"}, ""},
		{"severity critical", Input{Title: "t", Severity: "critical"}, ""},
		{"severity unknown", Input{Title: "t", Severity: "urgent"}, CodeInvalidSeverity},
		{"severity case", Input{Title: "t", Severity: "INFO"}, CodeInvalidSeverity},
		{"window ok", Input{Title: "t", StartsAt: at("2030-01-01T00:00:00Z"), EndsAt: at("2030-01-02T00:00:00Z")}, ""},
		{"window only start", Input{Title: "t", StartsAt: at("2030-01-01T00:00:00Z")}, ""},
		{"window only end", Input{Title: "t", EndsAt: at("2030-01-01T00:00:00Z")}, ""},
		{"window equal", Input{Title: "t", StartsAt: at("2030-01-01T00:00:00Z"), EndsAt: at("2030-01-01T00:00:00Z")}, CodeInvalidWindow},
		{"window reversed", Input{Title: "t", StartsAt: at("2030-01-02T00:00:00Z"), EndsAt: at("2030-01-01T00:00:00Z")}, CodeInvalidWindow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := validate(tc.in)
			if tc.code == "" {
				require.NoError(t, err)
				assert.NotEmpty(t, out.Severity)
				return
			}
			require.ErrorIs(t, err, domain.ErrInvalid)
			assert.Equal(t, tc.code, code(t, err))
		})
	}
}

func TestServiceCRUDAndVisibility(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
			svc := New(openStore(t, db)).WithClock(func() time.Time { return now })

			a, err := svc.Create(ctx, Input{Title: "  Maintenance  ", Body: "details", Active: true})
			require.NoError(t, err)
			assert.Equal(t, "Maintenance", a.Title)
			assert.Equal(t, SeverityInfo, a.Severity)
			_, err = uuid.Parse(a.ID)
			require.NoError(t, err)
			got, err := svc.Get(ctx, a.ID)
			require.NoError(t, err)
			assert.Equal(t, a.UpdatedAt, got.UpdatedAt)
			assert.Nil(t, got.StartsAt)

			now = now.Add(time.Minute)
			u, err := svc.Update(ctx, a.ID, Input{Title: "Maintenance tonight", Severity: SeverityWarning, Active: true,
				StartsAt: at("2030-06-01T10:00:00+02:00"), EndsAt: at("2030-06-02T00:00:00Z")})
			require.NoError(t, err)
			got, err = svc.Get(ctx, a.ID)
			require.NoError(t, err)
			assert.Equal(t, u, got)
			assert.Equal(t, "2030-06-01T08:00:00Z", got.StartsAt.Format(time.RFC3339), "stored in UTC")
			assert.True(t, got.UpdatedAt.After(a.UpdatedAt))

			missing := uuid.NewString()
			_, err = svc.Get(ctx, missing)
			require.ErrorIs(t, err, domain.ErrNotFound)
			_, err = svc.Update(ctx, missing, Input{Title: "x"})
			require.ErrorIs(t, err, domain.ErrNotFound)
			require.ErrorIs(t, svc.Delete(ctx, missing), domain.ErrNotFound)
			_, err = svc.Get(ctx, "not-a-uuid")
			require.ErrorIs(t, err, domain.ErrInvalid)

			require.NoError(t, svc.Delete(ctx, a.ID))
			list, err := svc.List(ctx)
			require.NoError(t, err)
			assert.Empty(t, list)

			// Created a second apart; the window is then checked at 12:01Z.
			now = time.Date(2030, 6, 1, 11, 0, 0, 0, time.UTC)
			mk := func(title, sev string, active bool, from, to *time.Time) {
				now = now.Add(time.Second)
				_, err := svc.Create(ctx, Input{Title: title, Severity: sev, Active: active, StartsAt: from, EndsAt: to})
				require.NoError(t, err)
			}
			mk("unbounded", "info", true, nil, nil)
			mk("inactive", "critical", false, nil, nil)
			mk("started", "warning", true, at("2030-06-01T00:00:00Z"), nil)
			mk("not yet", "info", true, at("2030-06-01T12:02:00Z"), nil)
			mk("ending", "critical", true, nil, at("2030-06-01T13:00:00Z"))
			mk("ended", "info", true, nil, at("2030-06-01T12:01:00Z")) // endsAt is exclusive
			mk("starts now", "info", true, at("2030-06-01T12:01:00Z"), at("2030-06-01T12:05:00Z"))
			mk("past window", "info", true, at("2030-05-01T00:00:00Z"), at("2030-05-02T00:00:00Z"))
			now = time.Date(2030, 6, 1, 12, 1, 0, 0, time.UTC)
			vis, err := svc.Visible(ctx)
			require.NoError(t, err)
			var titles []string
			for _, v := range vis {
				titles = append(titles, v.Title)
			}
			assert.Equal(t, []string{"ending", "started", "starts now", "unbounded"}, titles, "critical first, then newest")
			all, err := svc.List(ctx)
			require.NoError(t, err)
			assert.Len(t, all, 8)
		})
	}
}
