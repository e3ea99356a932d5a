package auth

import (
	"context"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
)

// TestEpochAcrossReplicas: replicas joining an external NATS share one
// epoch (same keys); a fresh (all-in-one) start or a rotation replaces it,
// and a replica follows the rotation at its next refresh.
func TestEpochAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kv, err := b.NewCAS(ctx, bus.BucketAuth)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.Repeat("k", 48)
	r1, err := NewEpoch(ctx, secret, kv, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := NewEpoch(ctx, secret, kv, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(r1.keys().session) != string(r2.keys().session) {
		t.Fatal("two replicas derived different keys")
	}
	if err := r1.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	if string(r1.keys().session) == string(r2.keys().session) {
		t.Fatal("rotation did not change the key")
	}
	if err := r2.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if string(r1.keys().session) != string(r2.keys().session) {
		t.Fatal("replica did not follow the rotation")
	}
	fresh, err := NewEpoch(ctx, secret, kv, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(fresh.keys().session) == string(r1.keys().session) {
		t.Fatal("a fresh start reused the epoch")
	}
	other := deriveKeys([]byte(strings.Repeat("x", 48)), fresh.keys().nonce)
	if string(other.session) == string(fresh.keys().session) {
		t.Fatal("the key does not depend on jwt_secret")
	}
}
