package bus

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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
