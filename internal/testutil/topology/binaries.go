package topology

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

var (
	binMu    sync.Mutex
	binPaths = map[string]string{}
)

// lcmBinary returns the path of bin/lcm-<name>: $LCM_<NAME>_BIN, else the
// file of that name beside $LCM_API_BIN (CI builds them all with `make
// build`), else one built from this checkout once per test process.
func lcmBinary(t testing.TB, name string) string {
	t.Helper()
	if name == "api" {
		return testutil.APIBinary(t)
	}
	if p := os.Getenv("LCM_" + strings.ToUpper(name) + "_BIN"); p != "" {
		return p
	}
	if api := os.Getenv("LCM_API_BIN"); api != "" {
		p := filepath.Join(filepath.Dir(api), "lcm-"+name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return build(t, "lcm-"+name, "./cmd/"+name)
}

// natsServerBinary returns a nats-server: $LCM_NATS_SERVER_BIN, else one
// built from the github.com/nats-io/nats-server/v2 module go.mod already
// requires (the version lcm-api embeds, v2.15: clustering with JetStream
// and replicated streams; Debian's nats-server is 2.9), cached under the
// user cache dir by version.
func natsServerBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LCM_NATS_SERVER_BIN"); p != "" {
		return p
	}
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/nats-io/nats-server/v2")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list nats-server: %v", err)
	}
	version := strings.TrimSpace(string(out))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	path := filepath.Join(cache, "lcm-test", "nats-server-"+version)
	binMu.Lock()
	defer binMu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + fmt.Sprintf(".%d", os.Getpid())
	b := exec.Command("go", "build", "-o", tmp, "github.com/nats-io/nats-server/v2")
	b.Dir = root
	b.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := b.CombinedOutput(); err != nil {
		t.Fatalf("go build nats-server %s: %v\n%s", version, err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// build builds a package of this module once per test process.
func build(t testing.TB, name, pkg string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binPaths[name]; ok {
		return p
	}
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "lcm-topology-bin-")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", p, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	binPaths[name] = p
	return p
}

// nginxBinary returns Debian's nginx (scripts/test.sh installs it).
func nginxBinary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/nginx", "/usr/bin/nginx"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	testutil.Unavailable(t, "nginx (apt-get install nginx)")
	return ""
}

// runCheck runs a command and returns its output if it failed, "" if not.
func runCheck(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%v: %s", err, out)
	}
	return ""
}
