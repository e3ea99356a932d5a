// Package credbox seals server credentials for one worker: the API encrypts
// them to the worker's X25519 public key (nacl/box anonymous sealing), only
// that worker's private key opens them. The worker's key pair lives in its
// memory only and changes with every start, so a sealed box recorded
// anywhere is useless after the worker stopped.
package credbox

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/crypto/nacl/box"
)

// KeyPair is a worker's X25519 key pair.
type KeyPair struct {
	Public  *[32]byte
	private *[32]byte
}

// NewKeyPair generates a key pair.
func NewKeyPair() (*KeyPair, error) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("credbox: generate key: %w", err)
	}
	return &KeyPair{Public: pub, private: priv}, nil
}

// Credentials are what a worker needs to run one job on one server. They
// exist in plaintext only in the API's memory while sealing and in the
// worker's memory while the job runs.
type Credentials struct {
	JobID    string `json:"job_id"`
	ServerID string `json:"server_id"`
	Addr     string `json:"addr"`
	HostKey  string `json:"host_key"`
	// User with PrivateKey (OpenSSH PEM) and/or Password logs in.
	User       string `json:"user"`
	PrivateKey string `json:"private_key,omitempty"`
	Password   string `json:"password,omitempty"`
	// SudoPassword is set when sudo asks for a password (bootstrap users).
	SudoPassword string `json:"sudo_password,omitempty"`
	// NewPrivateKey is the key a join or rotation installs and proves.
	NewPrivateKey string `json:"new_private_key,omitempty"`
	// CredVersion keys the worker's connection pool.
	CredVersion int64 `json:"cred_version"`
	// AgentID is set for a server with the agent transport: the job runs
	// through its lcm-agent instead of an SSH login.
	AgentID string `json:"agent_id,omitempty"`
	// PackageFamily selects the package-manager commands ("apt", …).
	PackageFamily string `json:"package_family,omitempty"`
	// SudoMode is the management user's sudo mode as LCM last proved it
	// (domain.SudoFull or SudoRestricted): the worker refuses the kinds
	// restricted mode blocks.
	SudoMode string `json:"sudo_mode,omitempty"`
	// InventoryDigest names the package inventory the control plane holds
	// for the server (pkgmgr's Inventory.Digest): a job whose closing
	// inventory has the same digest reports it unchanged instead of
	// sending every package.
	InventoryDigest string `json:"inventory_digest,omitempty"`
	// Secrets are a job's own secrets (a Linux user's password hash),
	// supplied by the area that submitted it (jobs.Service.SecretsFor).
	Secrets map[string]string `json:"secrets,omitempty"`
}

// Seal encrypts c to a worker's public key.
func Seal(c Credentials, workerPublic []byte) ([]byte, error) {
	if len(workerPublic) != 32 {
		return nil, errors.New("credbox: worker public key must be 32 bytes")
	}
	var pub [32]byte
	copy(pub[:], workerPublic)
	pt, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	out, err := box.SealAnonymous(nil, pt, &pub, rand.Reader)
	clear(pt)
	if err != nil {
		return nil, fmt.Errorf("credbox: seal: %w", err)
	}
	return out, nil
}

// Open decrypts a sealed box with the key pair.
func (k *KeyPair) Open(sealed []byte) (Credentials, error) {
	pt, ok := box.OpenAnonymous(nil, sealed, k.Public, k.private)
	if !ok {
		return Credentials{}, errors.New("credbox: sealed credentials do not open with this worker's key")
	}
	defer clear(pt)
	var c Credentials
	if err := json.Unmarshal(pt, &c); err != nil {
		return Credentials{}, fmt.Errorf("credbox: %w", err)
	}
	return c, nil
}
