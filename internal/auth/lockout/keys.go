package lockout

import (
	"encoding/base64"
	"strings"
)

// Key prefixes. Keys are "<prefix>.<base64url(value)>", which is valid as a
// NATS KV key (only [-/_=.a-zA-Z0-9]) whatever the value contains (IPv6
// colons, e-mail addresses, Unicode user names).
const (
	prefixIP      = "ip"
	prefixAccount = "acct"
	prefixTOTP    = "totp"
)

func key(prefix, v string) string {
	return prefix + "." + base64.RawURLEncoding.EncodeToString([]byte(v))
}

// IPKey returns the key of a client address. Pass the canonical form
// (clientip.ClientIP(...).String()) so one address has one counter.
func IPKey(ip string) string { return key(prefixIP, ip) }

// AccountKey returns the key of the password-login counter of an account.
// Pass the login name as typed, case-folded here, whether or not such a user
// exists: unknown names must be counted like known ones, or the lockout
// behaviour would reveal which names exist.
func AccountKey(account string) string { return key(prefixAccount, strings.ToLower(account)) }

// TOTPKey returns the key of the per-account TOTP failure counter that every
// TOTP check (login, disabling 2FA, changing one's password) shares.
func TOTPKey(userID string) string { return key(prefixTOTP, userID) }
