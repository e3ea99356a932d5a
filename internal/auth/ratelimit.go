package auth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// rateWindow is the fixed window of api_key_rate_limit_per_minute.
const rateWindow = time.Minute

var errWindowFull = errors.New("auth: rate window full")

// AllowAPIKey counts one request of the presented key (valid or not: the
// limit applies before validation, so guessing keys is throttled too) in
// the current fixed one-minute window, shared by every replica through
// NATS KV. It returns ok=false with the time until the window ends once
// api_key_rate_limit_per_minute requests were admitted; 0 turns it off.
// Exactly the limit is admitted per window, however many requests race:
// the count is one compare-and-swap update, and a full window is not
// written again.
func (s *Service) AllowAPIKey(ctx context.Context, key string) (bool, time.Duration, error) {
	set, err := s.Settings(ctx)
	if err != nil {
		return false, 0, err
	}
	limit := set.APIKeyRateLimitPerMinute
	if limit <= 0 {
		return true, 0, nil
	}
	now := s.now()
	start := now.Truncate(rateWindow)
	retry := start.Add(rateWindow).Sub(now)
	// The bucket's TTL (2 min) removes old windows.
	k := fmt.Sprintf("k.%s.%d", HashAPIKey(key)[:32], start.Unix())
	err = s.rate.Update(ctx, k, func(old []byte) ([]byte, error) {
		n := 0
		if len(old) > 0 {
			n, _ = strconv.Atoi(string(old))
		}
		if n >= limit {
			return nil, errWindowFull
		}
		return []byte(strconv.Itoa(n + 1)), nil
	})
	if errors.Is(err, errWindowFull) {
		return false, retry, nil
	}
	if err != nil {
		return false, 0, err
	}
	return true, 0, nil
}

// ErrRateLimited is the error of a throttled API key.
func ErrRateLimited(retry time.Duration) error {
	secs := int(math.Ceil(retry.Seconds()))
	if secs < 1 {
		secs = 1
	}
	return &domain.Error{Kind: domain.ErrRateLimited, Code: "rate_limited", Message: "API key rate limit exceeded",
		Details: map[string]int{"retry_after_seconds": secs}}
}
