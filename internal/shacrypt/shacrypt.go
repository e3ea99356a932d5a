// Package shacrypt implements SHA-512 crypt ("$6$", Ulrich Drepper's
// specification, as glibc and libxcrypt implement it): the hash
// /etc/shadow takes for a Linux user's password.
package shacrypt

import (
	"crypto/rand"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"strconv"
	"strings"
)

const (
	cryptAlphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	// shadowRounds costs ~30 ms per check here: a brute force on a leaked
	// shadow file is 13 times slower than glibc's default of 5000.
	shadowRounds  = 65000
	minRounds     = 1000
	maxRounds     = 999999999
	defaultRounds = 5000
	maxSaltLen    = 16
)

// Hash returns the SHA-512 crypt hash of pw with a random salt.
func Hash(pw string) (string, error) {
	salt := make([]byte, maxSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	for i, b := range salt {
		salt[i] = cryptAlphabet[b&0x3f] // 64 divides 256: unbiased
	}
	return sha512Crypt([]byte(pw), "$6$rounds="+strconv.Itoa(shadowRounds)+"$"+string(salt))
}

// Verify reports whether pw matches a "$6$" hash.
func Verify(hash, pw string) bool {
	i := strings.LastIndexByte(hash, '$')
	if i < 0 {
		return false
	}
	got, err := sha512Crypt([]byte(pw), hash[:i])
	return err == nil && subtle.ConstantTimeCompare([]byte(got), []byte(hash)) == 1
}

// sha512Crypt computes the hash for setting "$6$[rounds=N$]salt".
func sha512Crypt(pw []byte, setting string) (string, error) {
	if !strings.HasPrefix(setting, "$6$") {
		return "", errors.New("shacrypt: not a $6$ setting")
	}
	rest := setting[3:]
	rounds, explicit := defaultRounds, false
	if strings.HasPrefix(rest, "rounds=") {
		end := strings.IndexByte(rest, '$')
		if end < 0 {
			return "", errors.New("shacrypt: malformed rounds")
		}
		n, err := strconv.Atoi(rest[len("rounds="):end])
		if err != nil {
			return "", errors.New("shacrypt: malformed rounds")
		}
		rounds, explicit, rest = min(max(n, minRounds), maxRounds), true, rest[end+1:]
	}
	if i := strings.IndexByte(rest, '$'); i >= 0 {
		rest = rest[:i]
	}
	salt := []byte(rest)
	if len(salt) > maxSaltLen {
		salt = salt[:maxSaltLen]
	}

	b := sha512.New()
	b.Write(pw)
	b.Write(salt)
	b.Write(pw)
	sumB := b.Sum(nil)

	a := sha512.New()
	a.Write(pw)
	a.Write(salt)
	n := len(pw)
	for ; n > 64; n -= 64 {
		a.Write(sumB)
	}
	a.Write(sumB[:n])
	for n = len(pw); n > 0; n >>= 1 {
		if n&1 != 0 {
			a.Write(sumB)
		} else {
			a.Write(pw)
		}
	}
	sumA := a.Sum(nil)

	dp := sha512.New()
	for range len(pw) {
		dp.Write(pw)
	}
	p := repeatTo(dp.Sum(nil), len(pw))

	ds := sha512.New()
	for range 16 + int(sumA[0]) {
		ds.Write(salt)
	}
	s := repeatTo(ds.Sum(nil), len(salt))

	c := sumA
	h := sha512.New()
	for r := range rounds {
		h.Reset()
		if r&1 != 0 {
			h.Write(p)
		} else {
			h.Write(c)
		}
		if r%3 != 0 {
			h.Write(s)
		}
		if r%7 != 0 {
			h.Write(p)
		}
		if r&1 != 0 {
			h.Write(c)
		} else {
			h.Write(p)
		}
		c = h.Sum(c[:0])
	}

	var out strings.Builder
	out.WriteString("$6$")
	if explicit {
		out.WriteString("rounds=" + strconv.Itoa(rounds) + "$")
	}
	out.Write(salt)
	out.WriteByte('$')
	for _, t := range [][3]int{{0, 21, 42}, {22, 43, 1}, {44, 2, 23}, {3, 24, 45}, {25, 46, 4}, {47, 5, 26}, {6, 27, 48},
		{28, 49, 7}, {50, 8, 29}, {9, 30, 51}, {31, 52, 10}, {53, 11, 32}, {12, 33, 54}, {34, 55, 13}, {56, 14, 35},
		{15, 36, 57}, {37, 58, 16}, {59, 17, 38}, {18, 39, 60}, {40, 61, 19}, {62, 20, 41}} {
		b64(&out, c[t[0]], c[t[1]], c[t[2]], 4)
	}
	b64(&out, 0, 0, c[63], 2)
	return out.String(), nil
}

func repeatTo(d []byte, n int) []byte {
	out := make([]byte, 0, n)
	for len(out)+len(d) <= n {
		out = append(out, d...)
	}
	return append(out, d[:n-len(out)]...)
}

func b64(out *strings.Builder, b2, b1, b0 byte, n int) {
	w := uint(b2)<<16 | uint(b1)<<8 | uint(b0)
	for range n {
		out.WriteByte(cryptAlphabet[w&0x3f])
		w >>= 6
	}
}
