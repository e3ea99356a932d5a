package plane

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/lcmproject/lcm/internal/tlscert"
)

// tlsConfig returns a TLS config for 127.0.0.1, kept in dir so a restarted
// plane presents the same certificate.
func tlsConfig(t testing.TB, dir string) (*tls.Config, []byte) {
	t.Helper()
	certPath, keyPath := filepath.Join(dir, "nats-cert.pem"), filepath.Join(dir, "nats-key.pem")
	certPEM, err1 := os.ReadFile(certPath)
	keyPEM, err2 := os.ReadFile(keyPath)
	if err1 != nil || err2 != nil {
		c, k, err := tlscert.Generate("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM = []byte(c), []byte(k)
		_ = os.WriteFile(certPath, certPEM, 0o600)
		_ = os.WriteFile(keyPath, keyPEM, 0o600)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, certPEM
}
