package updates

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

const sum = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

const feedJSON = `{
  "schema": 1,
  "channels": {
    "community": [
      {"version": "1.2.0", "published_at": "2026-10-01T10:00:00Z", "notes_url": "https://example.org/v1.2.0"},
      {"version": "1.3.0", "published_at": "2026-11-20T10:00:00Z", "notes_url": "https://example.org/v1.3.0",
       "checksums": {"lcm_1.3.0_amd64.deb": "` + sum + `"}},
      {"version": "1.2.5", "published_at": "2026-11-01T10:00:00Z"}
    ],
    "beta": [
      {"version": "1.4.0-beta.1", "published_at": "2026-11-21T10:00:00Z"},
      {"version": "1.4.0-beta.2", "published_at": "2026-11-22T10:00:00Z"},
      {"version": "1.3.0", "published_at": "2026-11-20T10:00:00Z"}
    ]
  }
}`

func TestLatestAndNewer(t *testing.T) {
	f, err := ParseFeed([]byte(feedJSON))
	if err != nil {
		t.Fatal(err)
	}
	if l := f.Latest("community"); l == nil || l.Version != "1.3.0" || l.Checksums["lcm_1.3.0_amd64.deb"] != sum {
		t.Errorf("community latest %+v", l)
	}
	if l := f.Latest("beta"); l == nil || l.Version != "1.4.0-beta.2" {
		t.Errorf("beta latest %+v", l)
	}
	if l := f.Latest("enterprise"); l != nil {
		t.Errorf("enterprise latest %+v", l)
	}
	for _, c := range []struct {
		cand, cur string
		want      bool
	}{
		{"1.3.0", "1.2.9", true}, {"1.3.0", "1.3.0", false}, {"1.3.0", "1.3.0-beta.4", true},
		{"1.3.0-beta.2", "1.3.0-beta.1", true}, {"1.3.0-beta.1", "1.3.0", false}, {"1.2.10", "1.2.9", true},
		{"2.0.0", "10.0.0", false}, {"1.0.0", "dev", true}, {"junk", "1.0.0", false},
	} {
		if got := Newer(c.cand, c.cur); got != c.want {
			t.Errorf("Newer(%s, %s) = %v", c.cand, c.cur, got)
		}
	}
}

func TestParseFeedRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":      `{`,
		"schema":        `{"schema": 2, "channels": {}}`,
		"no schema":     `{"channels": {}}`,
		"channel":       `{"schema": 1, "channels": {"nightly": []}}`,
		"version":       `{"schema": 1, "channels": {"community": [{"version": "1.3", "published_at": "2026-01-01T00:00:00Z"}]}}`,
		"v prefix":      `{"schema": 1, "channels": {"community": [{"version": "v1.3.0", "published_at": "2026-01-01T00:00:00Z"}]}}`,
		"rc":            `{"schema": 1, "channels": {"community": [{"version": "1.3.0-rc.1", "published_at": "2026-01-01T00:00:00Z"}]}}`,
		"no time":       `{"schema": 1, "channels": {"community": [{"version": "1.3.0"}]}}`,
		"notes scheme":  `{"schema": 1, "channels": {"community": [{"version": "1.3.0", "published_at": "2026-01-01T00:00:00Z", "notes_url": "javascript:alert(1)"}]}}`,
		"checksum":      `{"schema": 1, "channels": {"community": [{"version": "1.3.0", "published_at": "2026-01-01T00:00:00Z", "checksums": {"a.deb": "md5:00"}}]}}`,
		"checksum name": `{"schema": 1, "channels": {"community": [{"version": "1.3.0", "published_at": "2026-01-01T00:00:00Z", "checksums": {"../a.deb": "` + sum + `"}}]}}`,
		"too big":       `{"schema": 1, "x": "` + strings.Repeat("a", MaxFeedBytes) + `"}`,
	} {
		if _, err := ParseFeed([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzParseFeed: any document either fails or yields a feed whose every
// release version parses, so Latest and Newer never see junk.
func FuzzParseFeed(f *testing.F) {
	f.Add([]byte(feedJSON))
	f.Add([]byte(`{"schema":1,"channels":{"beta":[{"version":"0.0.1-beta.1","published_at":"2026-01-01T00:00:00Z"}]}}`))
	f.Add([]byte(`{"schema":1,"channels":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		feed, err := ParseFeed(b)
		if err != nil {
			return
		}
		for ch := range feed.Channels {
			if l := feed.Latest(ch); l != nil {
				for _, r := range feed.Channels[ch] {
					if Newer(r.Version, l.Version) {
						t.Fatalf("%s: %s is newer than the latest %s", ch, r.Version, l.Version)
					}
				}
			}
		}
	})
}

func feedServer(t *testing.T, body *atomic.Value, status *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := status.Load(); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCheckStoresResult(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			var body atomic.Value
			body.Store(feedJSON)
			var status atomic.Int32
			srv := feedServer(t, &body, &status)
			now := time.Date(2026, 11, 24, 4, 20, 0, 0, time.UTC)
			svc := New(Options{Store: st, FeedURL: srv.URL, Current: "1.2.0", DailyCheck: true, Now: func() time.Time { return now }})

			in, err := svc.Info(ctx)
			if err != nil || in.Last != nil || in.UpdateAvailable || !in.FeedConfigured || in.Channel != "community" || !in.DailyCheck {
				t.Fatalf("before any check: %+v, %v", in, err)
			}
			r, err := svc.Check(ctx)
			if err != nil || !r.UpdateAvailable || r.Latest == nil || r.Latest.Version != "1.3.0" || !r.CheckedAt.Equal(now) {
				t.Fatalf("check: %+v, %v", r, err)
			}
			// Stored: another service (replica, restart) reads it.
			in, err = New(Options{Store: st, FeedURL: srv.URL, Current: "1.2.0"}).Info(ctx)
			if err != nil || in.Last == nil || !in.UpdateAvailable || in.Last.Latest.NotesURL != "https://example.org/v1.3.0" {
				t.Fatalf("stored: %+v, %v", in, err)
			}
			// After an upgrade to 1.3.0 the stored result is no longer news.
			in, _ = New(Options{Store: st, FeedURL: srv.URL, Current: "1.3.0"}).Info(ctx)
			if in.UpdateAvailable || in.Last.UpdateAvailable {
				t.Errorf("after upgrade: %+v", in)
			}
			// The beta channel sees the pre-release.
			beta := New(Options{Store: st, FeedURL: srv.URL, Channel: "beta", Current: "1.3.0"})
			if r, err := beta.Check(ctx); err != nil || !r.UpdateAvailable || r.Latest.Version != "1.4.0-beta.2" {
				t.Errorf("beta: %+v, %v", r, err)
			}
			// A feed that fails: the error is stored and answered.
			status.Store(http.StatusBadGateway)
			_, err = svc.Check(ctx)
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != "update_feed_unreachable" {
				t.Errorf("unreachable: %v", err)
			}
			in, _ = svc.Info(ctx)
			if in.Last == nil || !strings.Contains(in.Last.Error, "502") {
				t.Errorf("stored failure: %+v", in.Last)
			}
			status.Store(0)
			body.Store(`{"schema": 9}`)
			if _, err = svc.Check(ctx); !errors.As(err, &de) || de.Code != "update_feed_invalid" {
				t.Errorf("invalid: %v", err)
			}
			if err := svc.RunScheduled(ctx); err != nil {
				t.Errorf("scheduled run with a bad feed: %v", err)
			}
			// No feed configured.
			none := New(Options{Store: st, Current: "1.2.0"})
			if _, err := none.Check(ctx); !errors.As(err, &de) || de.Code != "update_feed_not_configured" {
				t.Errorf("no feed: %v", err)
			}
			if in, _ := none.Info(ctx); in.FeedConfigured || in.DailyCheck {
				t.Errorf("no feed info: %+v", in)
			}
		})
	}
}
