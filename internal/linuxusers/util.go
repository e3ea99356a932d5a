package linuxusers

import (
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/lcmproject/lcm/internal/domain"
)

func isNotFound(err error) bool { return errors.Is(err, domain.ErrNotFound) }

// shortID is 6 random hex digits that keep generated slugs unique.
func shortID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
