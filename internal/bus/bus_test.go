package bus

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/testutil"
)

func TestEmbeddedIdempotentAndDedup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := 0; i < 2; i++ { // second open on the same store: idempotent
		b, err := Open(ctx, Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if b.ClientURL() != "" {
			t.Fatal("embedded server without listen must take no port")
		}
		for _, name := range []string{BucketLocks, BucketLeader, BucketRateLimit, BucketLockout, BucketAuth, BucketAgents} {
			if _, err := b.KV(ctx, name); err != nil {
				t.Fatalf("bucket %s: %v", name, err)
			}
		}
		if i == 0 {
			for j := 0; j < 2; j++ {
				if _, err := b.JS.Publish(ctx, JobSubject("default", "s1"), []byte("job"), jetstream.WithMsgID("job-1")); err != nil {
					t.Fatal(err)
				}
			}
		}
		st, err := b.JS.Stream(ctx, StreamJobs)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := st.Info(ctx)
		if info.State.Msgs != 1 {
			t.Fatalf("dedup by job id failed: %d messages", info.State.Msgs)
		}
		b.Close()
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
