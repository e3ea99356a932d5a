package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/tlscert"
)

// TestTLSCertificateFromFiles: with LCM_TLS_CERT_FILE and LCM_TLS_KEY_FILE
// (tls_cert_file, tls_key_file) lcm-api presents the operator's
// certificate, which a client verifies against it (what the compose proxy
// does with both replicas), and the JWT secret comes from a secret file; a
// certificate that cannot be read stops the start with the key named.
func TestTLSCertificateFromFiles(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := tlscert.Generate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, jwtFile := filepath.Join(dir, "api.crt"), filepath.Join(dir, "api.key"), filepath.Join(dir, "jwt_secret")
	os.WriteFile(certFile, []byte(certPEM), 0o600)
	os.WriteFile(keyFile, []byte(keyPEM), 0o600)
	os.WriteFile(jwtFile, []byte(strings.Repeat("s", 48)+"\n"), 0o600)
	a := testutil.StartAPI(t, testutil.APIOptions{Env: []string{"LCM_TLS_CERT_FILE=" + certFile, "LCM_TLS_KEY_FILE=" + keyFile,
		"LCM_JWT_SECRET_FILE=" + jwtFile}})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(certPEM))
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", a.Port), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("the listener does not present the configured certificate: %v", err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(leaf.Raw, pair.Certificate[0]) {
		t.Fatal("another certificate was presented")
	}
	if !strings.Contains(a.Stderr(), "file="+certFile) {
		t.Fatalf("start log does not name the certificate file:\n%s", a.Stderr())
	}

	bad := testutil.StartAPI(t, testutil.APIOptions{NoWait: true, Env: []string{"LCM_TLS_CERT_FILE=" + filepath.Join(dir, "missing.crt"),
		"LCM_TLS_KEY_FILE=" + keyFile}})
	if code := bad.Wait(30 * time.Second); code == 0 || !strings.Contains(bad.Stderr(), "tls_cert_file") {
		t.Fatalf("a missing certificate: exit %d\n%s", code, bad.Stderr())
	}
}
