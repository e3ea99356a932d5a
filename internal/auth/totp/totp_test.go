package totp

import (
	"bytes"
	"image/png"
	"net/url"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rfcSecret is the RFC 6238 SHA-1 test secret "12345678901234567890" in base32.
const rfcSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

func codeAt(t *testing.T, secret string, step int64) string {
	t.Helper()
	c, err := hotp.GenerateCodeCustom(secret, uint64(step), hotp.ValidateOpts{Digits: Digits, Algorithm: otp.AlgorithmSHA1})
	require.NoError(t, err)
	return c
}

func TestGenerate(t *testing.T) {
	k, err := Generate("LCM", "alice@example.com")
	require.NoError(t, err)
	assert.Len(t, k.Secret, 32, "20 bytes in unpadded base32")
	u, err := url.Parse(k.URI)
	require.NoError(t, err)
	assert.Equal(t, "otpauth", u.Scheme)
	assert.Equal(t, "totp", u.Host)
	assert.Equal(t, k.Secret, u.Query().Get("secret"))
	assert.Equal(t, "LCM", u.Query().Get("issuer"))
	img, err := png.Decode(bytes.NewReader(k.QRPNG))
	require.NoError(t, err)
	assert.Equal(t, QRSize, img.Bounds().Dx())

	k2, err := Generate("LCM", "alice@example.com")
	require.NoError(t, err)
	assert.NotEqual(t, k.Secret, k2.Secret)
}

func TestValidateRFCVector(t *testing.T) {
	// RFC 6238 appendix B: T=59 → 94287082 (8 digits); the 6-digit code is
	// its last six digits.
	step, err := Validate(rfcSecret, "287082", time.Unix(59, 0), 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), step)
}

func TestValidateSkewAndReplay(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC)
	cur := Step(now)
	tests := []struct {
		name     string
		code     string
		lastStep int64
		want     int64
		err      error
	}{
		{"current", codeAt(t, rfcSecret, cur), 0, cur, nil},
		{"previous step", codeAt(t, rfcSecret, cur-1), 0, cur - 1, nil},
		{"next step", codeAt(t, rfcSecret, cur+1), 0, cur + 1, nil},
		{"two steps back", codeAt(t, rfcSecret, cur-2), 0, 0, ErrInvalidCode},
		{"two steps ahead", codeAt(t, rfcSecret, cur+2), 0, 0, ErrInvalidCode},
		{"replay same step", codeAt(t, rfcSecret, cur), cur, 0, ErrReplayed},
		{"replay older step", codeAt(t, rfcSecret, cur-1), cur, 0, ErrReplayed},
		{"newer than last", codeAt(t, rfcSecret, cur+1), cur, cur + 1, nil},
		{"with space", codeAt(t, rfcSecret, cur)[:3] + " " + codeAt(t, rfcSecret, cur)[3:], 0, cur, nil},
		{"too short", "12345", 0, 0, ErrInvalidCode},
		{"letters", "12345a", 0, 0, ErrInvalidCode},
		{"empty", "", 0, 0, ErrInvalidCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(rfcSecret, tt.code, now, tt.lastStep)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidateGeneratedKey(t *testing.T) {
	k, err := Generate("LCM", "bob")
	require.NoError(t, err)
	now := time.Now()
	step, err := Validate(k.Secret, codeAt(t, k.Secret, Step(now)), now, 0)
	require.NoError(t, err)
	_, err = Validate(k.Secret, codeAt(t, k.Secret, Step(now)), now, step)
	assert.ErrorIs(t, err, ErrReplayed)
}

func TestValidateBadSecret(t *testing.T) {
	_, err := Validate("not base32!", "123456", time.Now(), 0)
	assert.Error(t, err)
	assert.NotErrorIs(t, err, ErrInvalidCode)
}
