package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
)

// TestSessionTokenNumericDates: iat and exp are whole seconds (what every
// JWT library expects); iat_ms keeps the millisecond the sessions-valid-
// after check compares with.
func TestSessionTokenNumericDates(t *testing.T) {
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
	ep, err := NewEpoch(ctx, strings.Repeat("k", 48), kv, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 567_000_000, time.UTC)
	s := &Service{epoch: ep, now: func() time.Time { return now }}
	tok, _, err := s.issueSession("u1", "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"iat", "exp", "iat_ms"} {
		if strings.ContainsAny(string(raw[k]), ".eE") || len(raw[k]) == 0 {
			t.Errorf("%s = %s, want an integer", k, raw[k])
		}
	}
	if string(raw["iat"]) != "1795521600" || string(raw["iat_ms"]) != "1795521600567" {
		t.Errorf("iat %s, iat_ms %s", raw["iat"], raw["iat_ms"])
	}
	c, err := s.parseSession(tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.issuedMS() != now.UnixMilli() {
		t.Fatalf("issuedMS %d, want %d", c.issuedMS(), now.UnixMilli())
	}
}
