// Package totp is a thin wrapper over github.com/pquerna/otp for LCM's 2FA:
// generating a secret with its otpauth URI and QR code, and validating codes
// with ±1 step of clock skew while reporting the matched time step, so the
// caller can refuse a code whose step was already used (replay).
package totp

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"
)

// Parameters shared by generation and validation. Why these: 30 s, 6 digits
// and SHA-1 are what every authenticator app supports (RFC 6238 defaults;
// several apps ignore other values in the URI); 20 bytes (160 bits) is the
// secret size RFC 4226 recommends.
const (
	Period     = 30
	Digits     = otp.DigitsSix
	secretSize = 20
)

// Skew is how many steps before and after the current one are accepted.
// Why 1: tolerates 30 s of clock drift or a code typed at the end of its
// window, as RFC 6238 §5.2 suggests, without widening the guessing window
// further.
const Skew = 1

// QRSize is the width and height of the QR code PNG in pixels. Why 256:
// scannable from a laptop screen and small enough to inline as a data URI.
const QRSize = 256

// Errors of Validate. Both mean "reject and count a failure".
var (
	ErrInvalidCode = errors.New("totp: invalid code")
	ErrReplayed    = errors.New("totp: code already used")
)

// Key is a newly generated TOTP secret with the ways to hand it to an
// authenticator app.
type Key struct {
	Secret string // base32 without padding; store it encrypted
	URI    string // otpauth://totp/... URI
	QRPNG  []byte // PNG of a QR code of URI
}

// Generate creates a new random secret for account at issuer.
func Generate(issuer, account string) (Key, error) {
	k, err := totp.Generate(totp.GenerateOpts{
		Issuer:      issuer,
		AccountName: account,
		Period:      Period,
		SecretSize:  secretSize,
		Digits:      Digits,
		Algorithm:   otp.AlgorithmSHA1,
	})
	if err != nil {
		return Key{}, fmt.Errorf("totp: generate: %w", err)
	}
	img, err := k.Image(QRSize, QRSize)
	if err != nil {
		return Key{}, fmt.Errorf("totp: qr image: %w", err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return Key{}, fmt.Errorf("totp: qr png: %w", err)
	}
	return Key{Secret: k.Secret(), URI: k.URL(), QRPNG: buf.Bytes()}, nil
}

// Step returns the time step (counter) of t.
func Step(t time.Time) int64 { return t.Unix() / Period }

// Validate checks code against secret at now, accepting the steps from
// Step(now)-Skew to Step(now)+Skew. Steps ≤ lastStep are refused, which is
// the replay protection: store the returned step as the account's new
// lastStep after a successful check (0 for an account that never used a
// code). Spaces in code are ignored. It returns the matched step, or
// ErrInvalidCode, ErrReplayed, or an error for a malformed secret.
func Validate(secret, code string, now time.Time, lastStep int64) (int64, error) {
	code = strings.ReplaceAll(code, " ", "")
	if len(code) != Digits.Length() || strings.Trim(code, "0123456789") != "" {
		return 0, ErrInvalidCode
	}
	cur := Step(now)
	matched, replayed := int64(0), false
	// Every step is computed, whatever matches, so the time taken does not
	// depend on which step matched.
	for s := cur - Skew; s <= cur+Skew; s++ {
		if s < 0 {
			continue
		}
		want, err := hotp.GenerateCodeCustom(secret, uint64(s), hotp.ValidateOpts{Digits: Digits, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return 0, fmt.Errorf("totp: %w", err)
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			if s > lastStep {
				matched = s
			} else {
				replayed = true
			}
		}
	}
	switch {
	case matched != 0:
		return matched, nil
	case replayed:
		return 0, ErrReplayed
	}
	return 0, ErrInvalidCode
}
