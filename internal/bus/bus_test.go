package bus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestOpenWithoutEmbeddedServer: this package's tests do not import
// natsembed, like lcm-worker; opening without a URL says why it fails.
func TestOpenWithoutEmbeddedServer(t *testing.T) {
	_, err := Open(context.Background(), Options{DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "does not embed a NATS server") {
		t.Fatalf("want a clear error, got %v", err)
	}
}

// TestExternalNATS checks the external mode against the machine's nats-server
// (CI runs one at 127.0.0.1:4222; LCM_TEST_NATS_URL overrides).
func TestExternalNATS(t *testing.T) {
	url := os.Getenv("LCM_TEST_NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url, nats.Timeout(2*time.Second))
	if err != nil {
		testutil.Unavailable(t, "NATS at %s: %v", url, err)
	}
	nc.Close()
	b, err := Open(context.Background(), Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Healthy() || b.Embedded() {
		t.Fatal("external bus not healthy")
	}
}

// TestEnsureErrorKinds: which answers ensure waits out (a cluster still
// settling, a create that raced another replica's update) and which it
// reports at once.
func TestEnsureErrorKinds(t *testing.T) {
	api := func(code jetstream.ErrorCode) error {
		return fmt.Errorf("wrapped: %w", &jetstream.APIError{Code: 400, ErrorCode: code, Description: "x"})
	}
	for _, c := range []struct {
		name              string
		err               error
		settling, raceLst bool
	}{
		{"no peers yet", api(10005), true, false},
		{"cluster not available", api(10008), true, false},
		{"timeout", context.DeadlineExceeded, true, false},
		{"subjects overlap", api(10065), false, true},
		{"name in use", api(10058), false, true},
		{"bad config", api(10052), false, false},
		{"plain error", errors.New("boom"), false, false},
	} {
		if got := clusterSettling(c.err); got != c.settling {
			t.Errorf("%s: clusterSettling = %v", c.name, got)
		}
		if got := raceLost(c.err); got != c.raceLst {
			t.Errorf("%s: raceLost = %v", c.name, got)
		}
	}
}
