package backup

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
)

// Environment variables that give the passphrase; it is never stored.
const (
	EnvPassphrase     = "LCM_BACKUP_PASSPHRASE"
	EnvPassphraseFile = "LCM_BACKUP_PASSPHRASE_FILE"
)

// MinPassphraseLen is the shortest passphrase accepted. Why 12: with three
// character classes (or 20 characters of any kind) and scrypt in front, an
// offline guess of a stolen backup file stays out of reach.
const MinPassphraseLen = 12

// ErrNoPassphrase means neither variable is set.
var ErrNoPassphrase = errors.New("no backup passphrase: set " + EnvPassphrase + " or " + EnvPassphraseFile + " (a file holding it) in the service's environment")

// PassphraseFromEnv reads the passphrase from LCM_BACKUP_PASSPHRASE or the
// file LCM_BACKUP_PASSPHRASE_FILE names (one trailing newline dropped) and
// checks its strength.
func PassphraseFromEnv(getenv func(string) string) ([]byte, error) {
	p := getenv(EnvPassphrase)
	if p == "" {
		if path := getenv(EnvPassphraseFile); path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("backup passphrase file: %w", err)
			}
			p = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		}
	}
	if p == "" {
		return nil, ErrNoPassphrase
	}
	if err := CheckPassphrase(p); err != nil {
		return nil, err
	}
	return []byte(p), nil
}

// weakWords are passphrase stems refused whatever is appended to them.
var weakWords = []string{"password", "passwort", "lcmbackup", "backup", "123456", "qwerty", "letmein", "changeme", "admin"}

// CheckPassphrase refuses weak passphrases with a reason an operator can act
// on: shorter than MinPassphraseLen; under 20 characters with fewer than
// three character classes; mostly one repeated character; a common word
// with a few characters around it.
func CheckPassphrase(p string) error {
	n := len([]rune(p))
	if n < MinPassphraseLen {
		return fmt.Errorf("backup passphrase too weak: at least %d characters are required", MinPassphraseLen)
	}
	var lower, upper, digit, other bool
	counts := map[rune]int{}
	for _, r := range p {
		counts[r]++
		switch {
		case unicode.IsLower(r):
			lower = true
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsDigit(r):
			digit = true
		default:
			other = true
		}
	}
	classes := 0
	for _, b := range []bool{lower, upper, digit, other} {
		if b {
			classes++
		}
	}
	if n < 20 && classes < 3 {
		return errors.New("backup passphrase too weak: use at least three of lower case, upper case, digits and symbols, or 20 characters or more")
	}
	if len(counts) < n/3 || len(counts) < 6 {
		return errors.New("backup passphrase too weak: too many repeated characters")
	}
	low := strings.ToLower(p)
	for _, w := range weakWords {
		if strings.Contains(low, w) && n-len(w) < 8 {
			return fmt.Errorf("backup passphrase too weak: built around the common word %q", w)
		}
	}
	return nil
}
