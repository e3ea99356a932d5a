package agentgw

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

// CredentialStore holds one record per agent id (bus.AgentCredentials: the
// NATS KV bucket LCM_AGENTS). Get returns bus.ErrAgentNotFound for an
// unknown id; Update is a compare-and-swap on the revision.
type CredentialStore interface {
	Get(ctx context.Context, agentID string) ([]byte, uint64, error)
	Create(ctx context.Context, agentID string, value []byte) error
	Update(ctx context.Context, agentID string, value []byte, rev uint64) error
}

// Credential is the stored record of an agent. It never holds a secret,
// only its SHA-256.
type Credential struct {
	SecretSHA256 string `json:"secret_sha256"`
	ServerID     string `json:"server_id"`
	Revoked      bool   `json:"revoked"`
	// Enrolled turns true when the agent replaced the token's secret with
	// its own (agentproto.EnrollProperty); from then on the token is void.
	Enrolled   bool       `json:"enrolled"`
	CreatedAt  time.Time  `json:"created_at"`
	EnrolledAt *time.Time `json:"enrolled_at,omitempty"`
}

// Errors of credential checks. They are logged, never shown to the agent:
// every rejection looks the same on the wire.
var (
	ErrUnknownAgent = errors.New("agentgw: unknown agent")
	ErrRevoked      = errors.New("agentgw: agent revoked")
	ErrBadSecret    = errors.New("agentgw: wrong secret")
	ErrNotEnrolled  = errors.New("agentgw: agent has not enrolled")
	ErrReEnroll     = errors.New("agentgw: enrollment token already used")
)

// Enroll creates a new agent for serverID: a fresh agent id and secret,
// stores only the secret's hash, and returns the enrollment token (shown to
// the operator once) with the agent id. gatewayURL is the agent listener as
// agents reach it (wss://host:port/mqtt) and tlsFingerprint the SHA-256 of
// the certificate it presents (see agentproto.FingerprintSHA256), which the
// agent pins.
func Enroll(ctx context.Context, kv CredentialStore, serverID, gatewayURL, tlsFingerprint string) (token, agentID string, err error) {
	if serverID == "" {
		return "", "", errors.New("agentgw: enroll: empty server id")
	}
	fp := agentproto.NormalizeFingerprint(tlsFingerprint)
	if fp == "" {
		return "", "", fmt.Errorf("agentgw: enroll: %q is not a SHA-256 fingerprint", tlsFingerprint)
	}
	secret, err := agentproto.NewSecret()
	if err != nil {
		return "", "", fmt.Errorf("agentgw: enroll: %w", err)
	}
	t := agentproto.Token{AgentID: agentproto.NewID(), Secret: secret, GatewayURL: gatewayURL, TLSFingerprintSHA256: fp}
	if token, err = t.Format(); err != nil {
		return "", "", fmt.Errorf("agentgw: enroll: %w", err)
	}
	rec, err := json.Marshal(Credential{SecretSHA256: agentproto.SecretHash(secret), ServerID: serverID,
		CreatedAt: time.Now().UTC()})
	if err != nil {
		return "", "", err
	}
	if err := kv.Create(ctx, t.AgentID, rec); err != nil {
		return "", "", fmt.Errorf("agentgw: enroll: %w", err)
	}
	return token, t.AgentID, nil
}

// casRounds bounds read-modify-write loops on one record. Why 5: the only
// concurrent writers of a record are an enrollment and an operator's
// revoke, so more than one retry is already unusual.
const casRounds = 5

// Revoke marks an agent revoked: its next connect is rejected and a
// connected agent is disconnected at the gateway's next revalidation.
func Revoke(ctx context.Context, kv CredentialStore, agentID string) error {
	return update(ctx, kv, agentID, func(c *Credential) error {
		c.Revoked = true
		return nil
	})
}

// update applies fn to the record with compare-and-swap.
func update(ctx context.Context, kv CredentialStore, agentID string, fn func(*Credential) error) error {
	for range casRounds {
		c, rev, err := load(ctx, kv, agentID)
		if err != nil {
			return err
		}
		if err := fn(&c); err != nil {
			return err
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		err = kv.Update(ctx, agentID, b, rev)
		if !errors.Is(err, bus.ErrAgentChanged) {
			return err
		}
	}
	return bus.ErrAgentChanged
}

func load(ctx context.Context, kv CredentialStore, agentID string) (Credential, uint64, error) {
	raw, rev, err := kv.Get(ctx, agentID)
	if errors.Is(err, bus.ErrAgentNotFound) {
		return Credential{}, 0, ErrUnknownAgent
	}
	if err != nil {
		return Credential{}, 0, err
	}
	var c Credential
	if err := json.Unmarshal(raw, &c); err != nil {
		return Credential{}, 0, fmt.Errorf("agentgw: record of %s: %w", agentID, err)
	}
	if !agentproto.ValidFingerprint(c.SecretSHA256) {
		// A record without a well-formed hash can never match anything;
		// say so instead of comparing against garbage.
		return Credential{}, 0, fmt.Errorf("agentgw: record of %s has no valid secret hash", agentID)
	}
	return c, rev, nil
}

// verify checks a secret against a record: constant-time on the hashes.
func (c Credential) verify(secret string) error {
	if c.Revoked {
		return ErrRevoked
	}
	got := agentproto.SecretHash(secret)
	if subtle.ConstantTimeCompare([]byte(got), []byte(c.SecretSHA256)) != 1 {
		return ErrBadSecret
	}
	return nil
}

// authenticate decides one CONNECT. newHash is the EnrollProperty value
// ("" when absent). It returns the secret hash the connection is bound to
// (for revalidation). Any error is a rejection.
func authenticate(ctx context.Context, kv CredentialStore, agentID, secret, newHash string) (string, error) {
	if !agentproto.ValidAgentID(agentID) {
		return "", ErrUnknownAgent
	}
	if newHash == "" {
		c, _, err := load(ctx, kv, agentID)
		if err != nil {
			return "", err
		}
		if err := c.verify(secret); err != nil {
			return "", err
		}
		if !c.Enrolled {
			return "", ErrNotEnrolled
		}
		return c.SecretSHA256, nil
	}
	if !agentproto.ValidFingerprint(newHash) {
		return "", fmt.Errorf("agentgw: malformed %s", agentproto.EnrollProperty)
	}
	err := update(ctx, kv, agentID, func(c *Credential) error {
		if err := c.verify(secret); err != nil {
			return err
		}
		if c.Enrolled {
			return ErrReEnroll
		}
		now := time.Now().UTC()
		c.SecretSHA256, c.Enrolled, c.EnrolledAt = newHash, true, &now
		return nil
	})
	if err != nil {
		return "", err
	}
	return newHash, nil
}

// stillValid reports whether the record still admits a connection bound to
// hash (not revoked, not deleted, not re-enrolled with another secret).
func stillValid(ctx context.Context, kv CredentialStore, agentID, hash string) error {
	c, _, err := load(ctx, kv, agentID)
	if err != nil {
		return err
	}
	if c.Revoked {
		return ErrRevoked
	}
	if subtle.ConstantTimeCompare([]byte(hash), []byte(c.SecretSHA256)) != 1 {
		return ErrBadSecret
	}
	return nil
}
