package updates

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
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

// TestSelfUpdate: the self-update answer is "not supported" with steps for
// how this instance is installed: apt-get install of the feed's lcm and
// lcm-worker packages for the Debian package, replacing the binary
// otherwise; POST is refused with self_update_unsupported.
func TestSelfUpdate(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, "")
	var body atomic.Value
	f := NewFeed()
	if err := f.Add("community", Release{Version: "1.3.0", PublishedAt: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC), Checksums: map[string]string{
		"lcm_1.3.0_amd64.deb": sum, "lcm-worker_1.3.0_amd64.deb": sum, "lcm-agent_1.3.0_amd64.deb": sum}}); err != nil {
		t.Fatal(err)
	}
	b, _ := f.Encode()
	body.Store(string(b))
	var status atomic.Int32
	srv := feedServer(t, &body, &status)
	for _, tc := range []struct {
		exe, kind, step string
	}{
		{"/usr/lib/lcm/lcm-api", InstalledPackage, "apt-get install ./lcm-worker_1.3.0_amd64.deb ./lcm_1.3.0_amd64.deb"},
		{"/opt/lcm/lcm-api", InstalledBinary, "replace its binary with the one of 1.3.0"},
	} {
		svc := New(Options{Store: st, FeedURL: srv.URL, Current: "1.2.0", Executable: tc.exe})
		before, err := svc.SelfUpdate(ctx)
		if err != nil || before.Supported || before.UpdateAvailable || before.Latest != "" || len(before.Packages) != 0 {
			t.Fatalf("%s before a check: %+v %v", tc.exe, before, err)
		}
		if _, err := svc.Check(ctx); err != nil {
			t.Fatal(err)
		}
		su, err := svc.SelfUpdate(ctx)
		if err != nil || su.Supported || su.Installation != tc.kind || !su.UpdateAvailable || su.Latest != "1.3.0" || len(su.Packages) != 3 ||
			!strings.Contains(strings.Join(su.Instructions, "\n"), tc.step) {
			t.Fatalf("%s: %+v %v", tc.exe, su, err)
		}
		var de *domain.Error
		if err := svc.StartSelfUpdate(ctx); !errors.As(err, &de) || de.Code != "self_update_unsupported" || de.Kind != domain.ErrConflict {
			t.Fatalf("start: %v", err)
		}
		if err := st.PutSetting(ctx, SettingLast, nil); err != nil {
			t.Fatal(err)
		}
	}
}
