package password

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cheap keeps unit tests fast; the format and the defaults are tested once
// with DefaultParams.
var cheap = Params{Memory: 8 * 1024, Time: 1, Threads: 4, SaltLen: 16, KeyLen: 32}

func newHasher(t testing.TB, p Params, n int) *Hasher {
	t.Helper()
	h, err := NewHasher(p, n)
	require.NoError(t, err)
	return h
}

func TestHashDefaultFormat(t *testing.T) {
	h := newHasher(t, Params{}, 0)
	enc, err := h.Hash(context.Background(), good)
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^\$argon2id\$v=19\$m=65536,t=3,p=4\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`), enc)
	ok, err := h.Verify(context.Background(), enc, good)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.False(t, h.NeedsRehash(enc))
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	h := newHasher(t, cheap, 2)
	enc, err := h.Hash(ctx, good)
	require.NoError(t, err)

	enc2, err := h.Hash(ctx, good)
	require.NoError(t, err)
	assert.NotEqual(t, enc, enc2, "random salt")

	for _, tt := range []struct {
		pw   string
		want bool
	}{{good, true}, {good + "x", false}, {"", false}, {strings.ToLower(good), false}} {
		ok, err := h.Verify(ctx, enc, tt.pw)
		require.NoError(t, err)
		assert.Equal(t, tt.want, ok, tt.pw)
	}

	// Parameters come from the encoding: a hasher with other defaults still
	// verifies, and wants a rehash.
	other := newHasher(t, Params{Memory: 16 * 1024, Time: 2, Threads: 2, SaltLen: 16, KeyLen: 32}, 1)
	ok, err := other.Verify(ctx, enc, good)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, other.NeedsRehash(enc))
	assert.False(t, h.NeedsRehash(enc))
}

func TestVerifyMalformed(t *testing.T) {
	h := newHasher(t, cheap, 1)
	enc, err := h.Hash(context.Background(), good)
	require.NoError(t, err)
	f := strings.Split(enc, "$")
	join := func(parts ...string) string { return strings.Join(parts, "$") }
	for name, bad := range map[string]string{
		"empty":          "",
		"bcrypt":         "$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234",
		"argon2i":        join("", "argon2i", f[2], f[3], f[4], f[5]),
		"version 16":     join("", "argon2id", "v=16", f[3], f[4], f[5]),
		"param order":    join("", "argon2id", f[2], "t=1,m=8192,p=4", f[4], f[5]),
		"signed number":  join("", "argon2id", f[2], "m=+8192,t=1,p=4", f[4], f[5]),
		"zero time":      join("", "argon2id", f[2], "m=8192,t=0,p=4", f[4], f[5]),
		"huge memory":    join("", "argon2id", f[2], "m=4294967295,t=1,p=4", f[4], f[5]),
		"huge time":      join("", "argon2id", f[2], "m=8192,t=1000,p=4", f[4], f[5]),
		"threads 256":    join("", "argon2id", f[2], "m=8192,t=1,p=256", f[4], f[5]),
		"padded salt":    join("", "argon2id", f[2], f[3], f[4]+"==", f[5]),
		"short salt":     join("", "argon2id", f[2], f[3], "YWJj", f[5]),
		"bad base64":     join("", "argon2id", f[2], f[3], f[4], "!!!"),
		"extra field":    enc + "$x",
		"missing fields": join("", "argon2id", f[2], f[3]),
	} {
		t.Run(name, func(t *testing.T) {
			ok, err := h.Verify(context.Background(), bad, good)
			assert.False(t, ok)
			assert.ErrorIs(t, err, ErrMalformedHash)
			assert.True(t, h.NeedsRehash(bad))
		})
	}
}

func TestVerifyDummy(t *testing.T) {
	h := newHasher(t, cheap, 1)
	require.NoError(t, h.VerifyDummy(context.Background(), good))
	ok, err := h.Verify(context.Background(), h.dummy, "")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.False(t, h.NeedsRehash(h.dummy), "dummy uses the current parameters, so it costs the same")
}

func TestVerifyWaitRespectsContext(t *testing.T) {
	h := newHasher(t, cheap, 1)
	enc, err := h.Hash(context.Background(), good)
	require.NoError(t, err)
	h.sem <- struct{}{} // occupy the only slot
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = h.Verify(ctx, enc, good)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, h.VerifyDummy(ctx, good), context.Canceled)
	_, err = h.Hash(ctx, good)
	assert.ErrorIs(t, err, context.Canceled)
	<-h.sem
}

func TestNewHasherRejectsBadParams(t *testing.T) {
	_, err := NewHasher(Params{Memory: 8 * 1024, Time: 0, Threads: 4, SaltLen: 16, KeyLen: 32}, 1)
	assert.Error(t, err)
	_, err = NewHasher(Params{Memory: 8 * 1024, Time: 1, Threads: 4, SaltLen: 4, KeyLen: 32}, 1)
	assert.Error(t, err)
}

// vmHWM returns the process's peak resident set size in KiB from
// /proc/self/status, or -1 where that is unavailable.
func vmHWM() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// resetHWM asks the kernel to reset VmHWM to the current RSS (Linux ≥ 4.0);
// failure only makes the logged growth less precise.
func resetHWM() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// verifyBurst runs n concurrent Verify calls of one correct password and
// returns how many succeeded.
func verifyBurst(t testing.TB, h *Hasher, enc string, n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	okCount := 0
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			ok, err := h.Verify(context.Background(), enc, good)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				okCount++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	return okCount
}

// TestVerifyBurstBounded runs 100 concurrent verifies at the production
// memory size (64 MiB, t=1 to keep it short) and checks that all succeed and
// that never more than maxConcurrent hashes ran at once; the peak RSS growth
// is logged, not asserted.
func TestVerifyBurstBounded(t *testing.T) {
	p := Params{Memory: 64 * 1024, Time: 1, Threads: 4, SaltLen: 16, KeyLen: 32}
	n := 100
	if testing.Short() {
		p.Memory, n = 8*1024, 20
	}
	h := newHasher(t, p, 4)
	enc, err := h.Hash(context.Background(), good)
	require.NoError(t, err)
	resetHWM()
	before := vmHWM()
	assert.Equal(t, n, verifyBurst(t, h, enc, n))
	after := vmHWM()
	assert.LessOrEqual(t, h.peak.Load(), int32(4), "semaphore bound")
	t.Logf("%d concurrent verifies, %d KiB each, max 4 at once: peak hashes %d, VmHWM %d → %d KiB (+%d MiB)",
		n, p.Memory, h.peak.Load(), before, after, (after-before)/1024)
}

func TestErrMalformedIsSentinel(t *testing.T) {
	_, _, _, err := decode("$argon2id$v=19$m=1,t=1,p=4$YWJjZGVmZ2hpamtsbW5vcA$YWJjZGVmZ2hpamtsbW5vcGFiY2RlZmdoaWprbG1ub3A")
	assert.True(t, errors.Is(err, ErrMalformedHash))
}

func BenchmarkHash(b *testing.B) {
	h := newHasher(b, DefaultParams, 0)
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.Hash(ctx, good); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyBurst100 measures a burst of 100 concurrent verifies with
// the default parameters and reports the peak RSS growth.
func BenchmarkVerifyBurst100(b *testing.B) {
	h := newHasher(b, DefaultParams, 0)
	enc, err := h.Hash(context.Background(), good)
	require.NoError(b, err)
	resetHWM()
	before := vmHWM()
	for b.Loop() {
		if got := verifyBurst(b, h, enc, 100); got != 100 {
			b.Fatalf("%d of 100 verified", got)
		}
	}
	b.ReportMetric(float64(vmHWM()-before)/1024, "peak-RSS-growth-MiB")
	b.ReportMetric(float64(h.peak.Load()), "max-concurrent")
}
