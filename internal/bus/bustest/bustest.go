// Package bustest starts NATS servers that enforce the bus's accounts, for
// tests of the processes that connect under them. It lives apart from
// internal/testutil, which package bus's own tests import. Only _test.go
// files import it.
package bustest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed" // bus.Open without a URL embeds the server
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/tlscert"
)

// The scanner's account on a server from StartScanner.
const (
	ScannerUser     = "scanner"
	ScannerPassword = "scanner-pass"
)

// Server is lcm-api's embedded NATS as a scaled deployment runs it:
// listening with TLS on 127.0.0.1, the API's full user "api" and one
// least-privilege user, every stream and bucket created (bus.Open as
// lcm-api does).
type Server struct {
	// API is the server's own connection, as the "api" account.
	API *bus.Bus
	// URL is what clients dial: "tls://" + Listen.
	URL    string
	Listen string
	// CertPEM is the server's self-signed certificate, the CA a client
	// trusts; CAFile holds it for clients configured with a path.
	CertPEM string
	CAFile  string
}

// Start starts a Server with the least-privilege account user (e.g.
// bus.ScannerUser, bus.AgentGatewayUser); it stops when the test ends.
func Start(t testing.TB, user bus.User) *Server {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM, err := tlscert.Generate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "nats-ca.pem")
	if err := os.WriteFile(caFile, []byte(certPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	api, err := bus.Open(context.Background(), bus.Options{DataDir: dir, Listen: listen, User: "api", Password: "api-pass",
		TLS:   &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		Users: []bus.User{bus.FullUser("api", "api-pass"), user}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	return &Server{API: api, URL: "tls://" + listen, Listen: listen, CertPEM: certPEM, CAFile: caFile}
}

// StartScanner starts a Server whose least-privilege account is the
// scanner's: bus.ScannerUser(ScannerUser, ScannerPassword).
func StartScanner(t testing.TB) *Server {
	t.Helper()
	return Start(t, bus.ScannerUser(ScannerUser, ScannerPassword))
}

// ClientTLS is the TLS configuration of a client that trusts the server.
func (s *Server) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(s.CertPEM)) {
		t.Fatal("no certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
