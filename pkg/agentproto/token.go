package agentproto

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// TokenPrefix starts every enrollment token, so a token pasted into the
// wrong place (or leaked into a log) is recognisable and secret scanners can
// match it.
const TokenPrefix = "lcmenroll_"

// SecretBytes is the length of an agent secret before encoding. Why 32: 256
// random bits cannot be guessed, which is also why the gateway may store a
// plain SHA-256 of it (no slow password hash is needed for a secret that has
// no dictionary).
const SecretBytes = 32

// maxTokenLen bounds what ParseToken reads, so a pasted log file is rejected
// before it is decoded. A real token is ~330 characters.
const maxTokenLen = 4096

// Token is what an enrollment token carries. It is shown to the operator
// once; only the SHA-256 of Secret is stored.
type Token struct {
	AgentID string `json:"agent_id"`
	// Secret is base64url (unpadded) of SecretBytes random bytes.
	Secret string `json:"secret"`
	// GatewayURL is the agent listener, wss://host:port/mqtt.
	GatewayURL string `json:"gateway_url"`
	// TLSFingerprintSHA256 is the lowercase hex SHA-256 of the gateway's
	// leaf certificate (DER), which the agent pins instead of trusting a CA.
	TLSFingerprintSHA256 string `json:"tls_fingerprint_sha256"`
}

// Validate checks every field.
func (t Token) Validate() error {
	if !ValidAgentID(t.AgentID) {
		return fmt.Errorf("%w: token agent_id %q is not a lowercase UUID", ErrInvalid, t.AgentID)
	}
	if err := ValidateSecret(t.Secret); err != nil {
		return err
	}
	if err := ValidateGatewayURL(t.GatewayURL); err != nil {
		return err
	}
	if !ValidFingerprint(t.TLSFingerprintSHA256) {
		return fmt.Errorf("%w: token tls_fingerprint_sha256 must be 64 lowercase hex digits", ErrInvalid)
	}
	return nil
}

// Format validates t and encodes it as a token string.
func (t Token) Format() (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// ParseToken decodes and validates a token string. Surrounding whitespace
// (from copy and paste) is ignored.
func ParseToken(s string) (Token, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxTokenLen {
		return Token{}, fmt.Errorf("%w: token longer than %d characters", ErrInvalid, maxTokenLen)
	}
	body, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok {
		return Token{}, fmt.Errorf("%w: token does not start with %q", ErrInvalid, TokenPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return Token{}, fmt.Errorf("%w: token is not base64url: %v", ErrInvalid, err)
	}
	var t Token
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Token{}, fmt.Errorf("%w: token payload: %v", ErrInvalid, err)
	}
	if dec.More() {
		return Token{}, fmt.Errorf("%w: token payload has trailing data", ErrInvalid)
	}
	if err := t.Validate(); err != nil {
		return Token{}, err
	}
	return t, nil
}

// NewSecret returns a fresh agent secret.
func NewSecret() (string, error) {
	b := make([]byte, SecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ValidateSecret checks that s encodes exactly SecretBytes bytes.
func ValidateSecret(s string) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != SecretBytes {
		return fmt.Errorf("%w: secret must be base64url of %d bytes", ErrInvalid, SecretBytes)
	}
	return nil
}

// ValidateGatewayURL accepts only wss://host[:port]/mqtt: the agent never
// talks to the gateway without TLS.
func ValidateGatewayURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%w: gateway_url: %v", ErrInvalid, err)
	}
	if u.Scheme != "wss" || u.Host == "" || u.Hostname() == "" || u.Path != "/mqtt" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%w: gateway_url %q must be wss://host[:port]/mqtt", ErrInvalid, s)
	}
	return nil
}

// FingerprintSHA256 is the pin of a certificate: lowercase hex SHA-256 of
// its DER bytes (the same format lcm-api logs at start).
func FingerprintSHA256(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// NormalizeFingerprint accepts a fingerprint as operators copy it (upper
// case, colons, a "sha256:" prefix) and returns the canonical form, or ""
// when it is not a SHA-256.
func NormalizeFingerprint(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "sha256:")
	s = strings.ReplaceAll(s, ":", "")
	if !ValidFingerprint(s) {
		return ""
	}
	return s
}

// ValidFingerprint reports whether s is 64 lowercase hex digits.
func ValidFingerprint(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// NewID returns a random (version 4) UUID in canonical form.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ panics
		// inside Read instead); keep the signature simple.
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// EnrollProperty is the MQTT 5 CONNECT user property with which an agent
// enrolls: its value is SecretHash of a fresh secret the agent generated.
// The gateway accepts it only together with the token's secret and only
// once, then stores the new hash, which makes the enrollment token
// one-time: after enrollment its secret opens nothing.
const EnrollProperty = "lcm-enroll-secret-sha256"

// SecretHash is what the gateway stores for a secret: lowercase hex SHA-256
// of the secret string (see SecretBytes for why a plain hash suffices).
func SecretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
