// Package updates checks a release feed for a newer LCM version on the
// configured channel (docs/updates.md). The feed is one JSON document:
//
//	{
//	  "schema": 1,
//	  "channels": {
//	    "community": [
//	      {"version": "1.3.0", "published_at": "2026-11-20T10:00:00Z",
//	       "notes_url": "https://example.org/releases/v1.3.0",
//	       "checksums": {"lcm_1.3.0_amd64.deb": "sha256:<64 hex>"}}
//	    ],
//	    "beta": [{"version": "1.4.0-beta.1", …}]
//	  }
//	}
//
// The newest version of the channel (semver precedence, a beta before its
// release) is compared with the running binary's; the last result is kept
// in the setting update_check_last, so every replica and a restart show it.
package updates

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/release"
	"github.com/lcmproject/lcm/internal/store"
)

const (
	// SettingLast keys the stored last-check result.
	SettingLast = "update_check_last"
	// FeedSchema is the feed format this package reads.
	FeedSchema = 1
	// MaxFeedBytes bounds a feed document.
	MaxFeedBytes = 1 << 20
	// MaxReleases bounds the releases of one channel.
	MaxReleases  = 1000
	fetchTimeout = 30 * time.Second
)

// Release is one version of a channel.
type Release struct {
	Version     string            `json:"version"`
	PublishedAt time.Time         `json:"published_at"`
	NotesURL    string            `json:"notes_url,omitempty"`
	Checksums   map[string]string `json:"checksums,omitempty"` // file name → "sha256:<hex>"
}

// Feed is the release feed document.
type Feed struct {
	Schema   int                  `json:"schema"`
	Channels map[string][]Release `json:"channels"`
}

// ParseFeed reads and validates a feed: schema 1, known channels, versions
// X.Y.Z or X.Y.Z-beta.N, a published time, http(s) notes URLs, checksums
// "sha256:" with 64 hex digits.
func ParseFeed(b []byte) (Feed, error) {
	var f Feed
	if len(b) > MaxFeedBytes {
		return f, fmt.Errorf("feed larger than %d bytes", MaxFeedBytes)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Feed{}, fmt.Errorf("feed is not valid JSON: %w", err)
	}
	if f.Schema != FeedSchema {
		return Feed{}, fmt.Errorf("feed schema %d, this LCM reads schema %d", f.Schema, FeedSchema)
	}
	for ch, rs := range f.Channels {
		if !release.ValidChannel(ch) {
			return Feed{}, fmt.Errorf("feed: unknown channel %q", ch)
		}
		if len(rs) > MaxReleases {
			return Feed{}, fmt.Errorf("feed: channel %s lists more than %d releases", ch, MaxReleases)
		}
		for _, r := range rs {
			if _, err := release.ParseVersion(r.Version); err != nil || strings.HasPrefix(r.Version, "v") {
				return Feed{}, fmt.Errorf("feed: channel %s: version %q is not X.Y.Z or X.Y.Z-beta.N", ch, r.Version)
			}
			if r.PublishedAt.IsZero() {
				return Feed{}, fmt.Errorf("feed: %s %s: published_at missing", ch, r.Version)
			}
			if r.NotesURL != "" {
				if u, err := url.Parse(r.NotesURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
					return Feed{}, fmt.Errorf("feed: %s %s: notes_url is not an http(s) URL", ch, r.Version)
				}
			}
			for name, sum := range r.Checksums {
				h, ok := strings.CutPrefix(sum, "sha256:")
				if _, err := hex.DecodeString(h); !ok || err != nil || len(h) != 64 || name == "" || strings.ContainsAny(name, "/\\") {
					return Feed{}, fmt.Errorf("feed: %s %s: checksum of %q is not sha256:<64 hex>", ch, r.Version, name)
				}
			}
		}
	}
	return f, nil
}

// Latest is the newest release of channel, or nil.
func (f Feed) Latest(channel string) *Release {
	var best *Release
	var bv release.Version
	for i, r := range f.Channels[channel] {
		v, err := release.ParseVersion(r.Version)
		if err != nil {
			continue
		}
		if best == nil || bv.Less(v) {
			best, bv = &f.Channels[channel][i], v
		}
	}
	return best
}

// Newer reports whether candidate is a higher version than current. An
// unparsable current version (a development build) is older than any.
func Newer(candidate, current string) bool {
	c, err := release.ParseVersion(candidate)
	if err != nil {
		return false
	}
	cur, err := release.ParseVersion(current)
	if err != nil {
		return true
	}
	return cur.Less(c)
}

// Result is one check's outcome.
type Result struct {
	CheckedAt       time.Time `json:"checked_at"`
	Channel         string    `json:"channel"`
	Current         string    `json:"current"`
	Latest          *Release  `json:"latest"`
	UpdateAvailable bool      `json:"update_available"`
	Error           string    `json:"error,omitempty"`
}

// Info is what GET /system/update-info answers.
type Info struct {
	Current         string  `json:"current"`
	Channel         string  `json:"channel"`
	FeedConfigured  bool    `json:"feed_configured"`
	DailyCheck      bool    `json:"daily_check"`
	UpdateAvailable bool    `json:"update_available"`
	Last            *Result `json:"last"`
}

// Options configure a Service.
type Options struct {
	Store      *store.Store
	FeedURL    string // "" : no feed, checks answer update_feed_not_configured
	Channel    string // default community
	Current    string // the running version (internal/version)
	DailyCheck bool   // whether the daily task is registered
	Client     *http.Client
	Log        *slog.Logger
	Now        func() time.Time
	// Executable is lcm-api's path: /usr/lib/lcm/lcm-api means the Debian
	// package (the self-update answer's instructions).
	Executable string
}

// Service checks the feed and keeps the last result.
type Service struct{ o Options }

// New returns a Service.
func New(o Options) *Service {
	if o.Channel == "" {
		o.Channel = release.DefaultChannel
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: fetchTimeout}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o}
}

// Info answers the stored state without contacting the feed.
func (s *Service) Info(ctx context.Context) (Info, error) {
	in := Info{Current: s.o.Current, Channel: s.o.Channel, FeedConfigured: s.o.FeedURL != "", DailyCheck: s.o.DailyCheck && s.o.FeedURL != ""}
	var last Result
	ok, err := s.o.Store.GetSetting(ctx, SettingLast, &last)
	if err != nil {
		return in, err
	}
	if ok {
		// The binary may have been upgraded since the check: compare again.
		if last.Latest != nil {
			last.UpdateAvailable = last.Channel == s.o.Channel && Newer(last.Latest.Version, s.o.Current)
		}
		last.Current = s.o.Current
		in.Last = &last
		in.UpdateAvailable = last.UpdateAvailable
	}
	return in, nil
}

// Check fetches the feed now and stores the result. A feed that cannot be
// fetched or read is stored as a result with Error and returned as an
// ErrUnavailable error (code update_feed_unreachable or
// update_feed_invalid); no feed configured is update_feed_not_configured.
func (s *Service) Check(ctx context.Context) (Result, error) {
	if s.o.FeedURL == "" {
		return Result{}, domain.Unavailable("update_feed_not_configured", "no release feed is configured (config key updates.feed_url)")
	}
	r := Result{CheckedAt: s.o.Now().UTC().Truncate(time.Second), Channel: s.o.Channel, Current: s.o.Current}
	feed, code, err := s.fetch(ctx)
	if err != nil {
		r.Error = err.Error()
		if perr := s.o.Store.PutSetting(ctx, SettingLast, r); perr != nil {
			return r, perr
		}
		s.o.Log.Warn("update check failed", "feed", s.o.FeedURL, "err", err)
		return r, domain.Unavailable(code, "update check failed: "+err.Error())
	}
	r.Latest = feed.Latest(s.o.Channel)
	r.UpdateAvailable = r.Latest != nil && Newer(r.Latest.Version, s.o.Current)
	if err := s.o.Store.PutSetting(ctx, SettingLast, r); err != nil {
		return r, err
	}
	if r.UpdateAvailable {
		s.o.Log.Info("update available", "current", s.o.Current, "latest", r.Latest.Version, "channel", s.o.Channel)
	}
	return r, nil
}

// RunScheduled is the daily task: a failed fetch is stored and logged, not
// an error of the scheduler (it is retried the next day).
func (s *Service) RunScheduled(ctx context.Context) error {
	if s.o.FeedURL == "" {
		return nil
	}
	_, err := s.Check(ctx)
	if err != nil && errors.Is(err, domain.ErrUnavailable) {
		return nil
	}
	return err
}

func (s *Service) fetch(ctx context.Context) (Feed, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.o.FeedURL, nil)
	if err != nil {
		return Feed{}, "update_feed_unreachable", err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "lcm/"+s.o.Current)
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return Feed{}, "update_feed_unreachable", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Feed{}, "update_feed_unreachable", fmt.Errorf("feed answered %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxFeedBytes+1))
	if err != nil {
		return Feed{}, "update_feed_unreachable", err
	}
	f, err := ParseFeed(b)
	if err != nil {
		return Feed{}, "update_feed_invalid", err
	}
	return f, "", nil
}
