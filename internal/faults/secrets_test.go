//go:build faults

package faults

import (
	"bytes"
	"encoding/base64"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// secretsHost is the Debian test host of the secret scan (docs/testing.md).
const secretsHost = 20

// TestSecretsNeverAtRest runs the scenario that touches every kind of
// secret (runScenario) on the scaled topology with separate lcm-worker
// processes — once on SQLite (one replica), once on PostgreSQL (two
// replicas, and the real Debian test host 20 joined with its bootstrap
// password and given a Linux user) — stops every process, then scans
// everything they wrote for each known plaintext and its base64 forms:
// every process's log, the replicas' data dirs (config, SQLite database
// and WAL, backups), each NATS node's JetStream store (streams and KV),
// each worker's temp dir, nginx's logs, and a pg_dump of the PostgreSQL
// database. Zero hits; the generated admin password is on the first
// replica's console once (the spec), nowhere else.
func TestSecretsNeverAtRest(t *testing.T) {
	for _, mode := range []struct {
		name     string
		sqlite   bool
		replicas int
	}{{"sqlite", true, 1}, {"postgres", false, 2}} {
		t.Run(mode.name, func(t *testing.T) {
			pass := "Backup-Passphrase-" + randomSecret("x")
			top := topology.Start(t, topology.Options{Replicas: mode.replicas, SQLite: mode.sqlite, Segments: []string{"dc1"},
				Env: []string{"LCM_BACKUP_PASSPHRASE=" + pass}})
			o := scenarioOptions{}
			if !mode.sqlite {
				h := testutil.TestHostAt(t, secretsHost)
				if h.Password == "" {
					testutil.Unavailable(t, "test host %d has no bootstrap password file", secretsHost)
				}
				testutil.ResetTestHost(t, h)
				t.Cleanup(func() { testutil.ResetTestHost(t, h) })
				o.realHost = &h
			}
			sc := runScenario(t, top, o, pass)
			sc.addGenerated(t, top)
			// Everything to disk: stop the processes (logs closed, NATS
			// stores flushed).
			for _, w := range top.Workers {
				w.Stop()
			}
			for _, r := range top.APIs {
				r.Stop()
			}
			top.Nginx.Stop()
			for _, n := range top.NATS {
				n.Stop()
			}
			roots := []string{top.Dir}
			if !mode.sqlite {
				dump := filepath.Join(t.TempDir(), "lcm.sql")
				if out, err := exec.Command("pg_dump", "--dbname="+top.PGURL, "--file="+dump).CombinedOutput(); err != nil {
					testutil.Unavailable(t, "pg_dump: %v %s", err, out)
				}
				roots = append(roots, filepath.Dir(dump))
			}
			scanned := scanForSecrets(t, roots, sc.secrets, top.APIs[0].Log)
			// A control: the scan does see plaintext where it is (the JWT
			// secret in each replica's config.json, mode 0600).
			for _, r := range top.APIs {
				if b, err := os.ReadFile(r.ConfigPath()); err != nil || !bytes.Contains(b, []byte(topology.JWTSecret)) {
					t.Fatalf("control: jwt_secret not found in %s (%v)", r.ConfigPath(), err)
				}
			}
			// The scan covered what it must have.
			need := map[string]string{"NATS store": "/nats/nats-1/jetstream/", "worker temp dir": "/worker-dc1-"}
			if mode.sqlite {
				need["SQLite database"] = "/data/lcm.db"
			} else {
				need["PostgreSQL dump"] = "lcm.sql"
			}
			for what, frag := range need {
				found := false
				for _, p := range scanned {
					if strings.Contains(p, frag) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("the scan read no file of the %s (%s)", what, frag)
				}
			}
			for _, w := range top.Workers {
				if _, err := os.Stat(w.TmpDir); err != nil {
					t.Errorf("worker temp dir %s: %v", w.TmpDir, err)
				}
			}
			figure(t, "secret scan (%s, %d replica(s), separate lcm-worker): %d secrets of %d kinds, %d files (logs, data dirs, NATS stores, worker temp dirs%s): 0 hits",
				mode.name, mode.replicas, len(sc.secrets), kinds(sc.secrets), len(scanned), map[bool]string{true: "", false: ", pg_dump"}[mode.sqlite])
		})
	}
}

// kinds counts the kinds of secret (names up to a number or "line").
func kinds(secrets map[string]string) int {
	seen := map[string]bool{}
	for name := range secrets {
		k := name
		for _, cut := range []string{" line ", " code ", " 0", " 1", " 2", " 3", " 4", " 5", " 6", " 7", " 8", " 9", " ivan"} {
			if i := strings.Index(k, cut); i > 0 {
				k = k[:i]
			}
		}
		seen[k] = true
	}
	return len(seen)
}

// scanForSecrets reads every file under roots and fails for each secret
// found in plaintext, base64 or base64url; the admin password may be on
// the console (console, the first replica's log) exactly once. It returns
// the files read.
func scanForSecrets(t *testing.T, roots []string, secrets map[string]string, console string) []string {
	t.Helper()
	var files []string
	blobs := map[string][]byte{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files = append(files, path)
			blobs[path] = b
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range secrets {
		if len(s) < 8 {
			t.Fatalf("%s is too short to scan for", name)
		}
		forms := [][]byte{[]byte(s), []byte(base64.StdEncoding.EncodeToString([]byte(s))), []byte(base64.RawURLEncoding.EncodeToString([]byte(s)))}
		for path, b := range blobs {
			if name == "admin password" && path == console {
				if n := bytes.Count(b, forms[0]); n != 1 {
					t.Errorf("the admin password is on the console %d times, want once", n)
				}
				continue
			}
			for _, f := range forms {
				if i := bytes.Index(b, f); i >= 0 {
					lo, hi := max(0, i-80), min(len(b), i+len(f)+80)
					t.Errorf("%s found in %s: …%q…", name, path, b[lo:hi])
				}
			}
		}
	}
	return files
}
