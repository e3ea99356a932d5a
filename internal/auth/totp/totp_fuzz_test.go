package totp

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
)

// FuzzValidate: Validate never panics on any secret, code, time or last
// step; it accepts only six digits (spaces aside), only the code of a step
// within the skew of now and newer than lastStep, and returns that step.
func FuzzValidate(f *testing.F) {
	f.Add("JBSWY3DPEHPK3PXP", "123456", int64(1700000000), int64(0))
	valid, _ := hotp.GenerateCodeCustom("JBSWY3DPEHPK3PXP", uint64(1700000000/Period), hotp.ValidateOpts{Digits: Digits, Algorithm: otp.AlgorithmSHA1})
	f.Add("JBSWY3DPEHPK3PXP", valid, int64(1700000000), int64(0))
	f.Add("JBSWY3DPEHPK3PXP", valid[:3]+" "+valid[3:], int64(1700000000+Period), int64(0))
	f.Add("", "", int64(0), int64(-1))
	f.Add("not base32!", "12 34 56", int64(59), int64(1))
	f.Fuzz(func(t *testing.T, secret, code string, unix, last int64) {
		now := time.Unix(unix%(1<<40), 0)
		step, err := Validate(secret, code, now, last)
		if err != nil {
			if step != 0 {
				t.Fatalf("step %d with error %v", step, err)
			}
			return
		}
		digits := strings.ReplaceAll(code, " ", "")
		if len(digits) != 6 || strings.Trim(digits, "0123456789") != "" {
			t.Fatalf("accepted code %q", code)
		}
		if step <= last || step < Step(now)-Skew || step > Step(now)+Skew {
			t.Fatalf("step %d outside (%d, now %d ± %d]", step, last, Step(now), Skew)
		}
		want, err := hotp.GenerateCodeCustom(secret, uint64(step), hotp.ValidateOpts{Digits: Digits, Algorithm: otp.AlgorithmSHA1})
		if err != nil || want != digits {
			t.Fatalf("accepted %q for step %d, its code is %q (%v)", digits, step, want, err)
		}
		// The same code again is a replay.
		if _, err := Validate(secret, code, now, step); !errors.Is(err, ErrReplayed) && !errors.Is(err, ErrInvalidCode) {
			t.Fatalf("second use: %v", err)
		}
	})
}
