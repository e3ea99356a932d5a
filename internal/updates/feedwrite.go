package updates

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lcmproject/lcm/internal/release"
)

// NewFeed returns an empty feed of the schema this package reads.
func NewFeed() Feed { return Feed{Schema: FeedSchema, Channels: map[string][]Release{}} }

// Add puts r on channel (replacing a release of the same version), keeps
// the channel's releases newest first, and checks that the feed is still
// one ParseFeed accepts. This is how the release tooling writes the feed
// (go run ./cmd/release feed) and how the tests build the feeds they serve.
func (f *Feed) Add(channel string, r Release) error {
	if !release.ValidChannel(channel) {
		return fmt.Errorf("feed: unknown channel %q (one of %v)", channel, release.Channels)
	}
	v, err := release.ParseVersion(r.Version)
	if err != nil {
		return fmt.Errorf("feed: %w", err)
	}
	if f.Schema == 0 {
		f.Schema = FeedSchema
	}
	if f.Channels == nil {
		f.Channels = map[string][]Release{}
	}
	rs := slices.DeleteFunc(slices.Clone(f.Channels[channel]), func(o Release) bool { return o.Version == r.Version })
	rs = append(rs, r)
	slices.SortStableFunc(rs, func(a, b Release) int {
		av, _ := release.ParseVersion(a.Version)
		bv, _ := release.ParseVersion(b.Version)
		switch {
		case bv.Less(av):
			return -1
		case av.Less(bv):
			return 1
		}
		return 0
	})
	old := f.Channels[channel]
	f.Channels[channel] = rs
	if _, err := f.Encode(); err != nil {
		f.Channels[channel] = old
		return fmt.Errorf("feed: %s %s: %w", channel, v, err)
	}
	return nil
}

// Encode returns the feed as indented JSON, refused when ParseFeed would
// refuse it.
func (f Feed) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if _, err := ParseFeed(b); err != nil {
		return nil, err
	}
	return b, nil
}
