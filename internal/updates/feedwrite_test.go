package updates

import (
	"fmt"
	"testing"
	"time"
)

// TestFeedAdd: the writer keeps a channel newest first, replaces a release
// of the same version, refuses what ParseFeed would refuse (and leaves the
// feed as it was), and what it encodes reads back equal.
func TestFeedAdd(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	f := NewFeed()
	for _, v := range []string{"1.2.0", "1.10.0", "1.3.0-beta.1", "1.3.0", "1.2.5"} {
		if err := f.Add("community", Release{Version: v, PublishedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	for _, r := range f.Channels["community"] {
		order = append(order, r.Version)
	}
	if fmt.Sprint(order) != "[1.10.0 1.3.0 1.3.0-beta.1 1.2.5 1.2.0]" {
		t.Fatalf("order %v", order)
	}
	if err := f.Add("community", Release{Version: "1.3.0", PublishedAt: at, NotesURL: "https://example.org/1.3.0", Checksums: map[string]string{"lcm_1.3.0_amd64.deb": sum}}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Channels["community"]); n != 5 || f.Latest("community").Version != "1.10.0" {
		t.Fatalf("after replacing 1.3.0: %d releases, latest %s", n, f.Latest("community").Version)
	}
	for name, bad := range map[string]struct {
		ch string
		r  Release
	}{
		"channel":  {"nightly", Release{Version: "1.4.0", PublishedAt: at}},
		"version":  {"community", Release{Version: "v1.4", PublishedAt: at}},
		"no time":  {"community", Release{Version: "1.4.0"}},
		"notes":    {"community", Release{Version: "1.4.0", PublishedAt: at, NotesURL: "ftp://x"}},
		"checksum": {"community", Release{Version: "1.4.0", PublishedAt: at, Checksums: map[string]string{"a.deb": "md5:1"}}},
	} {
		if err := f.Add(bad.ch, bad.r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if n := len(f.Channels["community"]); n != 5 {
		t.Fatalf("a refused release changed the feed: %d releases", n)
	}
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseFeed(b)
	if err != nil || fmt.Sprint(back) != fmt.Sprint(f) {
		t.Fatalf("round trip: %v\n%v\n%v", err, back, f)
	}
}
