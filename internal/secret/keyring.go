// Package secret implements LCM's at-rest protection: the master key file
// lcm.key, AES-256-GCM field encryption and the blind index used to search
// encrypted server names.
//
// Ciphertext layout (stored as bytes):
//
//	0x01 | key id (4 bytes) | nonce (12 bytes) | AES-256-GCM(plaintext, aad)
//
// The key id lets a reader tell at once which master key a value was sealed
// with, so a database can never be silently read with the wrong key. The AAD
// binds each value to its column ("table.column"), so ciphertexts cannot be
// swapped between columns.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const (
	// KeySize is 32 bytes: AES-256.
	KeySize = 32
	// formatV1 is the first byte of every ciphertext; a new layout gets a new byte.
	formatV1  byte = 0x01
	keyIDSize      = 4
	nonceSize      = 12
	// Overhead is the number of bytes a ciphertext adds to its plaintext.
	Overhead = 1 + keyIDSize + nonceSize + 16
)

var (
	// ErrWrongKey means a value was sealed with a different master key.
	ErrWrongKey = errors.New("secret: value was encrypted with a different master key")
	// ErrCorrupt means a value is not a valid ciphertext or fails authentication.
	ErrCorrupt = errors.New("secret: ciphertext is corrupt or was tampered with")
)

// Keyring holds one master key and the keys derived from it.
type Keyring struct {
	id       [keyIDSize]byte
	aead     cipher.AEAD
	blindKey []byte
}

// NewKeyring derives the encryption and blind-index keys from a master key.
func NewKeyring(master []byte) (*Keyring, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("secret: master key must be %d bytes, got %d", KeySize, len(master))
	}
	encKey, err := hkdf.Key(sha256.New, master, nil, "lcm field encryption v1", KeySize)
	if err != nil {
		return nil, err
	}
	blindKey, err := hkdf.Key(sha256.New, master, nil, "lcm blind index v1", KeySize)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	k := &Keyring{aead: aead, blindKey: blindKey}
	m := hmac.New(sha256.New, master)
	m.Write([]byte("lcm key id v1"))
	copy(k.id[:], m.Sum(nil))
	return k, nil
}

// GenerateKey returns a new random master key.
func GenerateKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("secret: generate key: %w", err)
	}
	return k, nil
}

// ID is the public identifier of the master key (hex, 8 characters). It is
// stored in the database so a start with the wrong lcm.key is refused.
func (k *Keyring) ID() string { return hex.EncodeToString(k.id[:]) }

// Seal encrypts plaintext bound to aad (use "table.column").
func (k *Keyring) Seal(plaintext []byte, aad string) ([]byte, error) {
	out := make([]byte, 1+keyIDSize+nonceSize, Overhead+len(plaintext))
	out[0] = formatV1
	copy(out[1:], k.id[:])
	nonce := out[1+keyIDSize:]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secret: nonce: %w", err)
	}
	return k.aead.Seal(out, nonce, plaintext, []byte(aad)), nil
}

// Open decrypts a value produced by Seal with the same aad.
func (k *Keyring) Open(ciphertext []byte, aad string) ([]byte, error) {
	if len(ciphertext) < Overhead || ciphertext[0] != formatV1 {
		return nil, ErrCorrupt
	}
	if !hmac.Equal(ciphertext[1:1+keyIDSize], k.id[:]) {
		return nil, fmt.Errorf("%w (value key id %x, current key id %s)", ErrWrongKey, ciphertext[1:1+keyIDSize], k.ID())
	}
	nonce := ciphertext[1+keyIDSize : 1+keyIDSize+nonceSize]
	pt, err := k.aead.Open(nil, nonce, ciphertext[1+keyIDSize+nonceSize:], []byte(aad))
	if err != nil {
		return nil, ErrCorrupt
	}
	return pt, nil
}

// KeyIDOf returns the key id a ciphertext was sealed with.
func KeyIDOf(ciphertext []byte) (string, bool) {
	if len(ciphertext) < Overhead || ciphertext[0] != formatV1 {
		return "", false
	}
	return hex.EncodeToString(ciphertext[1 : 1+keyIDSize]), true
}

// BlindIndex returns a keyed hash of the normalised value (lower case,
// surrounding space trimmed) so equal names can be found without decrypting.
// The domain separates indexes of different columns.
func (k *Keyring) BlindIndex(domain, value string) string {
	m := hmac.New(sha256.New, k.blindKey)
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write([]byte(Normalize(value)))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Normalize is the normalisation applied before blind indexing.
func Normalize(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
