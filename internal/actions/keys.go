package actions

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// NewManagementKey generates a unique ed25519 key pair for one server and
// returns the private key as OpenSSH PEM.
func NewManagementKey(comment string) (string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("actions: generate key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return "", fmt.Errorf("actions: marshal key: %w", err)
	}
	return string(pem.EncodeToMemory(block)), nil
}

// AuthorizedKeyOf returns the authorized_keys line of a private key.
func AuthorizedKeyOf(privatePEM, comment string) (string, error) {
	s, err := ssh.ParsePrivateKey([]byte(privatePEM))
	if err != nil {
		return "", fmt.Errorf("actions: parse key: %w", err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
	if comment != "" {
		line += " " + comment
	}
	return line, nil
}
