package debpkg

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hostService is the installed lcm-api running on the test host the way
// lcm-api.service runs it — the unit's ExecStart as the unit's User and
// Group — but started directly: the test hosts have no systemd (and a
// daemon there listens on the machine's network, so it binds only the
// host's own address, on a port free on the machine).
type hostService struct {
	d      *debHost
	pid    string
	log    string // the output file on the host
	base   string
	client *http.Client
}

// serviceConfig writes /etc/lcm/config.json as an operator would before the
// first start: the listener on the host's address, no agent listener, no
// 2FA requirement (the test signs in with the password only).
func serviceConfig(t *testing.T, d *debHost) (port int) {
	t.Helper()
	ln, err := net.Listen("tcp", d.h.Host+":0")
	if err != nil {
		t.Fatal(err)
	}
	port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	cfg, _ := json.Marshal(map[string]any{"jwt_secret": hex.EncodeToString(b), "host": d.h.Host, "port": port, "agent_port": 0,
		"require_2fa_roles": []string{}})
	d.must(fmt.Sprintf("printf '%%s\\n' '%s' > /etc/lcm/config.json && chown lcm-api:lcm-api /etc/lcm/config.json && chmod 600 /etc/lcm/config.json", cfg))
	return port
}

// startService starts the installed lcm-api from its unit and waits until
// it answers /api/v1/health.
func startService(t *testing.T, d *debHost, port int, logName string) *hostService {
	t.Helper()
	unit := parseUnit(t, "lcm-api", d.must("cat /lib/systemd/system/lcm-api.service"))
	exec := unit["Service"]["ExecStart"][0]
	user, group := unit["Service"]["User"][0], unit["Service"]["Group"][0]
	s := &hostService{d: d, log: "/root/" + logName, base: fmt.Sprintf("https://%s:%d", d.h.Host, port),
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}}
	// Only the program is put in the background, with every descriptor
	// redirected, so the ssh session ends at once.
	s.pid = d.must(fmt.Sprintf("cd /; setsid setpriv --reuid=%s --regid=%s --init-groups %s > %s 2>&1 < /dev/null & echo $!",
		user, group, exec, s.log))
	t.Cleanup(func() { d.sh("kill -KILL " + s.pid + " 2>/dev/null") })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := s.client.Get(s.base + "/api/v1/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if _, alive := d.sh("kill -0 " + s.pid); !alive || time.Now().After(deadline) {
			t.Fatalf("the installed lcm-api did not become healthy (alive %v):\n%s", alive, s.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if u := d.must("stat -c %U /proc/" + s.pid); u != user {
		t.Fatalf("lcm-api runs as %q, want the service account %s", u, user)
	}
	return s
}

func (s *hostService) output() string { out, _ := s.d.sh("cat " + s.log); return out }

// stop ends the process with SIGTERM, as systemctl stop does, and waits.
func (s *hostService) stop(t *testing.T) {
	t.Helper()
	s.d.must("kill -TERM " + s.pid + " && for i in $(seq 1 150); do kill -0 " + s.pid + " 2>/dev/null || exit 0; sleep 0.1; done; exit 1")
	if !strings.Contains(s.output(), "=== LCM service stopped ===") {
		t.Fatalf("lcm-api did not stop cleanly:\n%s", s.output())
	}
}

func (s *hostService) do(t *testing.T, method, path, token string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case strings.HasPrefix(token, "lcm_"):
		req.Header.Set("X-API-Key", token)
	case token != "":
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		_ = json.Unmarshal(raw, out)
	}
	return resp.StatusCode
}

func (s *hostService) login(t *testing.T, user, password string) string {
	t.Helper()
	var r struct{ Token string }
	if code := s.do(t, "POST", "/api/v1/auth/login", "", map[string]string{"username": user, "password": password}, &r); code != http.StatusOK || r.Token == "" {
		t.Fatalf("login %s on the host: %d", user, code)
	}
	return r.Token
}

var (
	adminPasswordRe = regexp.MustCompile(`password: (\S+)`)
	tlsSHARe        = regexp.MustCompile(`msg="TLS certificate" sha256=(\S+)`)
)
