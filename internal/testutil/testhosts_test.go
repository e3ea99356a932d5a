package testutil

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// dialTestHost opens an SSH connection to h. ClientConfig.Timeout bounds only
// the TCP dial, so the handshake gets a deadline on the net.Conn.
func dialTestHost(t *testing.T, h TestHost, user string, auth ssh.AuthMethod) *ssh.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", h.Addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", h.Addr, err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	cc, chans, reqs, err := ssh.NewClientConn(conn, h.Addr, &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{auth},
		HostKeyCallback: h.HostKeyCallback(t),
	})
	if err != nil {
		_ = conn.Close()
		t.Fatalf("ssh %s@%s: %v", user, h.Addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	c := ssh.NewClient(cc, chans, reqs)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func run(t *testing.T, c *ssh.Client, cmd, stdin string) (string, error) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer func() { _ = s.Close() }()
	if stdin != "" {
		s.Stdin = strings.NewReader(stdin)
	}
	out, err := s.CombinedOutput(cmd)
	return strings.TrimSpace(string(out)), err
}

// Hosts 1 and 2 are separate Debian hosts. Host 1 is only read by the
// others (internal/sshexec); internal/fleet resets host 2 while its
// package runs, so both hold host 2's lock: this test never meets a host
// in the middle of a reset.
func TestTestHostsAreSeparateDebianHosts(t *testing.T) {
	LockTestHostAt(t, 2)
	hosts := TestHosts(t, 2)

	names := map[string]string{}
	for _, h := range hosts {
		c := dialTestHost(t, h, "root", ssh.PublicKeys(h.Signer(t)))
		name, err := run(t, c, "hostname", "")
		if err != nil {
			t.Fatalf("%s: hostname: %v: %s", h.Addr, err, name)
		}
		if name != h.Hostname {
			t.Errorf("%s: hostname %q, want %q", h.Addr, name, h.Hostname)
		}
		if other, dup := names[name]; dup {
			t.Errorf("%s and %s both call themselves %q", other, h.Addr, name)
		}
		names[name] = h.Addr
		if out, err := run(t, c, "sudo -n true", ""); err != nil {
			t.Errorf("%s: sudo -n true as root: %v: %s", h.Addr, err, out)
		}
		if out, err := run(t, c, "test -f /etc/debian_version && dpkg-query -W sudo openssh-server", ""); err != nil {
			t.Errorf("%s: not a Debian with sudo and openssh-server: %v: %s", h.Addr, err, out)
		}
	}
}

// The password-bootstrap path: BootstrapUser logs in with its password and
// sudo wants that password.
func TestTestHostsBootstrapUser(t *testing.T) {
	h := TestHosts(t, 1)[0]
	if h.Password == "" {
		t.Fatalf("no bootstrap password")
	}
	c := dialTestHost(t, h, BootstrapUser, ssh.Password(h.Password))
	if out, err := run(t, c, "sudo -n true", ""); err == nil {
		t.Errorf("sudo -n true as %s succeeded; want a password prompt: %s", BootstrapUser, out)
	}
	out, err := run(t, c, "sudo -S -p '' id -u", h.Password+"\n")
	if err != nil || out != "0" {
		t.Errorf("sudo -S id -u as %s: %v: %q", BootstrapUser, err, out)
	}
}

// ResetTestHost restarts the host and kills its sessions, which would disturb
// anyone else using the shared hosts: opt in with LCM_TESTHOSTS_RESET_TEST=N
// (the host number to reset).
func TestResetTestHost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LCM_TESTHOSTS_RESET_TEST"))
	if n < 1 {
		t.Skip("opt-in: LCM_TESTHOSTS_RESET_TEST=N resets test host N")
	}
	h := TestHostAt(t, n)
	LockTestHost(t, h)
	c := dialTestHost(t, h, "root", ssh.PublicKeys(h.Signer(t)))
	if out, err := run(t, c, "echo 'Defaults !lecture' >/etc/sudoers.d/reset-test && chmod 440 /etc/sudoers.d/reset-test", ""); err != nil {
		t.Fatalf("write: %v: %s", err, out)
	}
	_ = c.Close()
	ResetTestHost(t, h)
	c = dialTestHost(t, h, "root", ssh.PublicKeys(h.Signer(t)))
	if out, err := run(t, c, "test ! -e /etc/sudoers.d/reset-test", ""); err != nil {
		t.Fatalf("/etc/sudoers.d/reset-test survived the reset: %v: %s", err, out)
	}
}

func TestParseExportsAndKnownHosts(t *testing.T) {
	env := parseExports([]byte("export LCM_TESTHOSTS='127.0.0.2:22,127.0.0.3:22'\n# comment\nexport LCM_TESTHOSTS_KEY='/k'\n"))
	if env[EnvTestHosts] != "127.0.0.2:22,127.0.0.3:22" || env[EnvTestHostsKey] != "/k" {
		t.Fatalf("parseExports: %v", env)
	}
	p := filepath.Join(t.TempDir(), "known_hosts")
	kh := "127.0.0.2 ssh-ed25519 AAAA1\n127.0.0.2 ecdsa-sha2-nistp256 AAAA2\n[127.0.0.3]:2222 ssh-rsa AAAA3\n"
	if err := os.WriteFile(p, []byte(kh), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := readKnownHosts(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(m["127.0.0.2"]) != 2 || m["127.0.0.2"][1] != "ecdsa-sha2-nistp256 AAAA2" || m["127.0.0.3"][0] != "ssh-rsa AAAA3" {
		t.Fatalf("readKnownHosts: %v", m)
	}
}
