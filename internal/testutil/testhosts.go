package testutil

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Environment variables printed by `deploy/testhosts/testhosts.sh env`.
const (
	EnvTestHosts           = "LCM_TESTHOSTS"               // 127.0.0.2:22,127.0.0.3:22,…
	EnvTestHostsKey        = "LCM_TESTHOSTS_KEY"           // root's private key (OpenSSH format)
	EnvTestHostsPassword   = "LCM_TESTHOSTS_PASSWORD_FILE" // password of BootstrapUser
	EnvTestHostsKnownHosts = "LCM_TESTHOSTS_KNOWN_HOSTS"   // known_hosts with every host's keys
	EnvTestHostsCache      = "LCM_TESTHOSTS_CACHE"         // script cache/state dir
)

// DefaultTestHostsCache is where testhosts.sh keeps its base rootfs and state.
const DefaultTestHostsCache = "/var/cache/lcm-testhosts"

// BootstrapUser is the non-root account on every test host: password login,
// member of sudo, sudo asks for the password (the password-bootstrap path).
const BootstrapUser = "bootstrap"

// TestHost is one real Debian test host started by deploy/testhosts/testhosts.sh.
type TestHost struct {
	Index      int    // 1-based host number as the script counts (reset I)
	Addr       string // host:port, e.g. "127.0.0.2:22"
	Host       string // "127.0.0.2"
	Port       int    // 22
	Hostname   string // "lcm-test-1"
	KeyPath    string // root's private key file
	PrivateKey []byte // contents of KeyPath; root@Addr accepts it
	Password   string // BootstrapUser's password
	// HostKeys are the host's public host keys as authorized-keys lines
	// ("ssh-ed25519 AAAA…"), for pinning.
	HostKeys []string
}

// Signer returns root's key as an ssh.Signer.
func (h TestHost) Signer(t testing.TB) ssh.Signer {
	t.Helper()
	s, err := ssh.ParsePrivateKey(h.PrivateKey)
	if err != nil {
		t.Fatalf("test host key %s: %v", h.KeyPath, err)
	}
	return s
}

// HostKeyCallback accepts exactly the host's own host keys.
func (h TestHost) HostKeyCallback(t testing.TB) ssh.HostKeyCallback {
	t.Helper()
	keys := make([]ssh.PublicKey, 0, len(h.HostKeys))
	for _, line := range h.HostKeys {
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			t.Fatalf("test host %s: bad host key %q: %v", h.Addr, line, err)
		}
		keys = append(keys, k)
	}
	return func(_ string, _ net.Addr, key ssh.PublicKey) error {
		for _, k := range keys {
			if bytes.Equal(k.Marshal(), key.Marshal()) {
				return nil
			}
		}
		return fmt.Errorf("test host %s: unknown host key %s", h.Addr, ssh.FingerprintSHA256(key))
	}
}

// TestHosts returns n running test hosts, or marks the test unavailable
// (fails in CI, skips locally) when fewer are up. It reads the LCM_TESTHOSTS*
// variables or, when LCM_TESTHOSTS is unset, the env file the script writes
// in its cache dir. It never starts hosts itself (that needs root and, the
// first time, a minute of debootstrap): run
// `deploy/testhosts/testhosts.sh up N` first.
//
// The hosts are shared by all tests and packages: a test that changes a
// host in a way others could notice should call ResetTestHost when done.
func TestHosts(t testing.TB, n int) []TestHost {
	t.Helper()
	hosts := make([]TestHost, 0, n)
	for i := 1; i <= n; i++ {
		hosts = append(hosts, TestHostAt(t, i))
	}
	return hosts
}

// TestHostAt returns test host i (1-based, as testhosts.sh numbers them: host
// I listens on 127.0.0.(I+1):22) and checks that this one host, and only
// this one, is reachable: another package may be resetting a host this test
// does not use, and that must not fail it.
func TestHostAt(t testing.TB, i int) TestHost {
	t.Helper()
	env, err := testHostsEnv()
	if err != nil {
		Unavailable(t, "test hosts: %v (run: sudo deploy/testhosts/testhosts.sh up %d)", err, i)
	}
	var addrs []string
	for _, a := range strings.Split(env[EnvTestHosts], ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if i < 1 || len(addrs) < i {
		Unavailable(t, "need test host %d, %s lists %d (run: sudo deploy/testhosts/testhosts.sh up %d)",
			i, EnvTestHosts, len(addrs), i)
	}
	addr := addrs[i-1]

	keyPath := env[EnvTestHostsKey]
	key, err := os.ReadFile(keyPath)
	if err != nil {
		Unavailable(t, "test host key: %v", err)
	}
	var password string
	if p := env[EnvTestHostsPassword]; p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			Unavailable(t, "test host password: %v", err)
		}
		password = strings.TrimSpace(string(b))
	}
	known, err := readKnownHosts(env[EnvTestHostsKnownHosts])
	if err != nil {
		Unavailable(t, "test host known_hosts: %v", err)
	}

	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s: bad address %q: %v", EnvTestHosts, addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatalf("%s: bad port in %q", EnvTestHosts, addr)
	}
	idx := 0
	if ip := net.ParseIP(host).To4(); ip != nil && ip[0] == 127 && ip[1] == 0 && ip[2] == 0 {
		idx = int(ip[3]) - 1 // the script puts host I on 127.0.0.(I+1)
	} else if InOwnNetns(host) {
		idx = int(ip[2]) // up-netns puts host I on 198.18.I.2
	}
	// Fail fast (and skip locally) when the host is down, rather than
	// letting the test time out. A host that another test of the same
	// package has just reset may still be starting its sshd: give it a
	// few seconds before calling it unreachable.
	if !waitTCP(addr, 15*time.Second) {
		Unavailable(t, "test host %s not reachable (run: sudo deploy/testhosts/testhosts.sh up %d)", addr, i)
	}
	hk := known[host]
	if len(hk) == 0 {
		Unavailable(t, "no host keys for %s in %s", host, env[EnvTestHostsKnownHosts])
	}
	return TestHost{
		Index:      idx,
		Addr:       addr,
		Host:       host,
		Port:       port,
		Hostname:   fmt.Sprintf("lcm-test-%d", idx),
		KeyPath:    keyPath,
		PrivateKey: key,
		Password:   password,
		HostKeys:   hk,
	}
}

// InOwnNetns reports whether host is the address of a test host that runs
// in its own network namespace (`testhosts.sh up-netns I`: 198.18.I.2).
// Tests that change a firewall must check it: on any other test host they
// would change the machine's own firewall.
func InOwnNetns(host string) bool {
	ip := net.ParseIP(host).To4()
	return ip != nil && ip[0] == 198 && ip[1] == 18 && ip[3] == 2 && ip[2] >= 1
}

// waitTCP reports whether addr accepts a TCP connection within timeout.
func waitTCP(addr string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			_ = c.Close()
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ReloadSSHD is a command for a root shell on a test host: SIGHUP to sshd,
// then wait (up to 30 s) until the re-executed sshd has written its pid
// file again. sshd writes it after binding its listeners and installing
// its signal handlers, so from then on it answers new connections with the
// new configuration and survives the next SIGHUP (one sent earlier would
// kill it). Tests that change sshd's configuration run it instead of
// sleeping after `kill -HUP`.
const ReloadSSHD = `p=/run/sshd.pid; old=$(stat -c %y "$p"); kill -HUP "$(cat "$p")"; i=0; ` +
	`while [ "$(stat -c %y "$p" 2>/dev/null)" = "$old" ] || [ ! -s "$p" ]; do ` +
	`i=$((i+1)); if [ "$i" -gt 300 ]; then echo "sshd did not write $p again within 30 s of its SIGHUP" >&2; exit 1; fi; ` +
	`sleep 0.1; done`

// ResetTestHost puts h back to the pristine base image (clears its overlay,
// restarts its sshd; host keys and credentials stay the same). It needs
// root; without it the test is marked unavailable.
func ResetTestHost(t testing.TB, h TestHost) {
	t.Helper()
	RequireRoot(t)
	if h.Index < 1 {
		t.Fatalf("ResetTestHost: %s is not a testhosts.sh host", h.Addr)
	}
	script := testHostsScript()
	if script == "" {
		Unavailable(t, "deploy/testhosts/testhosts.sh not found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script, "reset", strconv.Itoa(h.Index))
	if c := os.Getenv(EnvTestHostsCache); c != "" {
		cmd.Env = append(os.Environ(), EnvTestHostsCache+"="+c)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reset test host %d (%s): %v\n%s", h.Index, h.Addr, err, out)
	}
	if !waitTCP(h.Addr, 30*time.Second) {
		t.Fatalf("reset test host %d (%s): sshd did not come back within 30 s", h.Index, h.Addr)
	}
}

// testHostsEnv returns the LCM_TESTHOSTS* settings: the script's env file in
// the cache dir (if any), overridden by the environment.
func testHostsEnv() (map[string]string, error) {
	cache := os.Getenv(EnvTestHostsCache)
	if cache == "" {
		cache = DefaultTestHostsCache
	}
	env := map[string]string{}
	b, fileErr := os.ReadFile(filepath.Join(cache, "env"))
	if fileErr == nil {
		env = parseExports(b)
	}
	for _, k := range []string{EnvTestHosts, EnvTestHostsKey, EnvTestHostsPassword, EnvTestHostsKnownHosts, EnvTestHostsCache} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	if env[EnvTestHosts] == "" {
		if fileErr != nil {
			return nil, fmt.Errorf("%s unset and no state in %s: %v", EnvTestHosts, cache, fileErr)
		}
		return nil, fmt.Errorf("%s is empty", EnvTestHosts)
	}
	if env[EnvTestHostsKey] == "" {
		return nil, fmt.Errorf("%s is unset", EnvTestHostsKey)
	}
	return env, nil
}

// parseExports reads lines of the form `export K='V'` as the script writes
// them (values never contain quotes).
func parseExports(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		out[k] = strings.Trim(v, `'"`)
	}
	return out
}

// readKnownHosts maps each host in a known_hosts file (plain, unhashed
// entries as the script writes them) to its keys as authorized-keys lines.
func readKnownHosts(path string) (map[string][]string, error) {
	if path == "" {
		return nil, fmt.Errorf("%s is unset", EnvTestHostsKnownHosts)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		for _, h := range strings.Split(f[0], ",") {
			// "[127.0.0.2]:2222" for non-default ports.
			if strings.HasPrefix(h, "[") {
				if hh, _, err := net.SplitHostPort(h); err == nil {
					h = strings.Trim(hh, "[]")
				}
			}
			out[h] = append(out[h], f[1]+" "+f[2])
		}
	}
	return out, sc.Err()
}

// testHostsScript finds deploy/testhosts/testhosts.sh relative to this
// source file (tests run from their package directory, not the repo root).
func testHostsScript() string {
	if p := os.Getenv("LCM_TESTHOSTS_SCRIPT"); p != "" {
		return p
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	p := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "testhosts", "testhosts.sh")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
