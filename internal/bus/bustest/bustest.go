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
	"testing"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed" // bus.Open without a URL embeds the server
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/tlscert"
)

// The scanner's account on a ScannerServer.
const (
	ScannerUser     = "scanner"
	ScannerPassword = "scanner-pass"
)

// ScannerServer is an embedded NATS server listening with TLS on
// 127.0.0.1 with two accounts: "api" (bus.FullUser) and ScannerUser
// (bus.ScannerUser).
type ScannerServer struct {
	// API is the server's own connection, as the "api" account.
	API *bus.Bus
	// Listen is the host:port clients dial (URL "tls://" + Listen).
	Listen string
	// CertPEM is the server's self-signed certificate, the CA a client
	// trusts.
	CertPEM string
}

// StartScannerServer starts a ScannerServer that stops when the test ends.
func StartScannerServer(t testing.TB) *ScannerServer {
	t.Helper()
	certPEM, keyPEM, err := tlscert.Generate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	api, err := bus.Open(context.Background(), bus.Options{DataDir: t.TempDir(), Listen: listen, User: "api", Password: "api-pass",
		TLS:   &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		Users: []bus.User{bus.FullUser("api", "api-pass"), bus.ScannerUser(ScannerUser, ScannerPassword)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	return &ScannerServer{API: api, Listen: listen, CertPEM: certPEM}
}

// ClientTLS is the TLS configuration of a client that trusts the server.
func (s *ScannerServer) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(s.CertPEM)) {
		t.Fatal("no certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
