package topology

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

// startNginx runs Debian's nginx as the TLS reverse proxy in front of the
// replicas: TLS with a certificate of ca, upstream HTTPS verified against
// the replicas' certificate (upstreamPEM, their shared self-signed one),
// keepalive to the upstreams, passive health (a replica that refuses
// connections is skipped for 2 s), no buffering (live job streams).
func startNginx(t testing.TB, dir string, ca *testutil.TestCA, upstreamPEM []byte, replicas []*Replica) (*Proc, int) {
	t.Helper()
	bin := nginxBinary(t)
	ndir := filepath.Join(dir, "nginx")
	for _, d := range []string{"tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi"} {
		if err := os.MkdirAll(filepath.Join(ndir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cert := ca.ServerCert(t, "127.0.0.1")
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(ndir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crt := write("proxy.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}))
	key := write("proxy.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	up := write("upstream.crt", upstreamPEM)
	port := freePort(t)
	var servers []string
	for _, r := range replicas {
		servers = append(servers, fmt.Sprintf("    server 127.0.0.1:%d max_fails=1 fail_timeout=2s;", r.Port))
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // the temp dirs are root's
	}
	conf := fmt.Sprintf(`%s
worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
master_process on;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 16384; }
http {
  access_log %[2]s/access.log;
  client_body_temp_path %[2]s/tmp/body;
  proxy_temp_path %[2]s/tmp/proxy;
  fastcgi_temp_path %[2]s/tmp/fastcgi;
  uwsgi_temp_path %[2]s/tmp/uwsgi;
  scgi_temp_path %[2]s/tmp/scgi;
  client_max_body_size 64m;
  upstream lcm {
%[3]s
    keepalive 64;
  }
  server {
    listen 127.0.0.1:%[4]d ssl;
    ssl_certificate %[5]s;
    ssl_certificate_key %[6]s;
    location / {
      proxy_pass https://lcm;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto https;
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate %[7]s;
      proxy_ssl_name localhost;
      proxy_ssl_session_reuse on;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
      proxy_connect_timeout 2s;
      proxy_next_upstream error timeout;
    }
  }
}
`, user, ndir, strings.Join(servers, "\n"), port, crt, key, up)
	cfg := write("nginx.conf", []byte(conf))
	p := newProc(t, dir, "nginx", bin, []string{"-p", ndir, "-c", cfg}, nil)
	check := runCheck(bin, "-t", "-p", ndir, "-c", cfg)
	if check != "" {
		t.Fatalf("nginx -t: %s", check)
	}
	p.Start()
	t.Cleanup(p.Stop)
	return p, port
}
