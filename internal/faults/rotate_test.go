//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/secret"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// rotateVolume is how many extra certificates are stored so a rotation
// takes long enough to be killed at many different points.
const rotateVolume = 20000

// TestRotateKilledAtRandomPoints: a database holding a value in every
// column of the registry of encrypted columns (the secret scenario, plus
// bulk so a rotation takes a while) is rotated with `lcm-api
// rotate-db-key`, killed (-9) at 50 random points of its run. After each
// kill, every encrypted field — all columns of the registry, every row —
// is sealed with the one key the data dir resolves to and opens with it;
// no lcm.key.next is left. Afterwards lcm-api starts and uses the
// credentials (a job runs). On SQLite and PostgreSQL.
func TestRotateKilledAtRandomPoints(t *testing.T) {
	kills := size(50, 50)
	for _, db := range []struct {
		name   string
		sqlite bool
	}{{"sqlite", true}, {"postgres", false}} {
		t.Run(db.name, func(t *testing.T) {
			pass := "Backup-Passphrase-" + randomSecret("x")
			top := topology.Start(t, topology.Options{Replicas: 1, SQLite: db.sqlite, Segments: []string{"dc1"},
				Env: []string{"LCM_BACKUP_PASSPHRASE=" + pass}})
			sc := runScenario(t, top, scenarioOptions{}, pass)
			r := top.APIs[0]
			r.Stop()
			fillEncrypted(t, top, sc)
			before := checkOneKey(t, top)

			bin := lcmBinaryPath(t)
			rotate := func() *exec.Cmd {
				cmd := exec.Command(bin, "rotate-db-key", "-config", r.ConfigPath())
				cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				return cmd
			}
			start := time.Now()
			if err := rotate().Wait(); err != nil {
				t.Fatalf("an uninterrupted rotation: %v", err)
			}
			full := time.Since(start)
			keys := map[string]int{}
			prev := checkOneKey(t, top)
			if prev.key == before.key {
				t.Fatal("an uninterrupted rotation kept the key")
			}
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23))
			var changed, kept int
			for i := 0; i < kills; i++ {
				at := time.Duration(rng.Int64N(int64(full) * 12 / 10))
				cmd := rotate()
				time.Sleep(at)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
				got := checkOneKey(t, top)
				keys[got.key]++
				if got.key == prev.key {
					kept++
				} else {
					changed++
				}
				prev = got
			}
			// The service starts on whatever key the kills left, and the
			// stored credentials work: a job on every server succeeds.
			r.Start()
			r.WaitHealthy(t, time.Minute)
			top.WaitProxyUp(30 * time.Second)
			token := top.Login()
			var jobs []string
			for _, id := range sc.servers {
				job, resp := submit(top, token, id, "packages/refresh")
				if job == "" {
					t.Fatalf("refresh after the kills: %d %v %s", resp.Code, resp.Err, resp.Body)
				}
				jobs = append(jobs, job)
			}
			top.WaitJobs(jobs, 3*time.Minute, "success")
			if resp := top.Do("GET", "/api/v1/servers", token, nil, nil); resp.Code != http.StatusOK {
				t.Fatalf("servers after the kills: %d", resp.Code)
			}
			figure(t, "rotate-db-key (%s, %d encrypted fields in %d columns, a full run %s) killed -9 at %d random points: each time every field sealed with the one resolved key (%d kills before the commit, %d after), no lcm.key.next left; the service started and ran %d jobs with the stored credentials",
				db.name, prev.fields, prev.columns, full.Round(10*time.Millisecond), kills, kept, changed, len(jobs))
		})
	}
}

// lcmBinaryPath is the lcm-api binary the topology runs.
func lcmBinaryPath(t *testing.T) string { return testutil.APIBinary(t) }

// openStore opens the replica's database with its master key.
func openStore(t *testing.T, top *topology.Topology) (*store.Store, *secret.Keyring) {
	t.Helper()
	ctx := context.Background()
	data := top.APIs[0].DataDir()
	st, err := store.Open(ctx, store.Options{URL: top.DBURL, DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	kr, _, err := st.ResolveMasterKey(ctx, data)
	if err != nil {
		st.Close()
		t.Fatalf("resolve the master key: %v", err)
	}
	st.SetKeyring(kr)
	return st, kr
}

// fillEncrypted stores a value in every registered encrypted column the
// scenario left empty (a pending key exists only during a join) and adds
// rotateVolume certificates, so every column is rotated and the run lasts.
func fillEncrypted(t *testing.T, top *topology.Topology, sc scenario) {
	t.Helper()
	ctx := context.Background()
	st, _ := openStore(t, top)
	defer st.Close()
	if err := st.SetPendingKey(ctx, sc.servers[0], "-----BEGIN OPENSSH PRIVATE KEY-----\npending\n-----END OPENSSH PRIVATE KEY-----\n"); err != nil {
		t.Fatal(err)
	}
	// A server whose join has not run yet still holds its bootstrap
	// credentials (a join clears them).
	if _, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "awaiting-join", Host: "192.0.2.44", Port: 22,
		Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k"},
		Secrets: store.ServerSecrets{BootstrapUser: "debian", BootstrapPassword: randomSecret("boot-"),
			BootstrapKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nbootstrap\n-----END OPENSSH PRIVATE KEY-----\n"}}); err != nil {
		t.Fatal(err)
	}
	err := st.InTx(ctx, func(tx *store.Store) error {
		for i := 0; i < rotateVolume; i++ {
			if err := tx.CreateCertificate(ctx, store.Certificate{Name: fmt.Sprintf("bulk-%06d", i), CertPEM: "c", KeyPEM: fmt.Sprintf("secret-%d", i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// keyState is what checkOneKey found.
type keyState struct {
	key             string
	fields, columns int
}

// checkOneKey resolves the data dir's master key and opens every value of
// every registered encrypted column with it; every column must hold at
// least one value (a column added later without data in the scenario
// fails here, so the test keeps covering the whole registry).
func checkOneKey(t *testing.T, top *topology.Topology) keyState {
	t.Helper()
	st, kr := openStore(t, top)
	defer st.Close()
	if _, err := os.Stat(filepath.Join(top.APIs[0].DataDir(), secret.NextKeyFileName)); err == nil {
		t.Fatal("lcm.key.next left after the key was resolved")
	}
	db, err := st.SQL()
	if err != nil {
		t.Fatal(err)
	}
	out := keyState{key: kr.ID()}
	var empty []string
	for _, col := range store.EncryptedColumns() {
		rows, err := db.Query(fmt.Sprintf(`SELECT %s, %s FROM %s`, col.PK, col.Column, col.Table))
		if err != nil {
			t.Fatalf("%s: %v", col.AAD(), err)
		}
		n := 0
		for rows.Next() {
			var pk string
			var ct []byte
			if err := rows.Scan(&pk, &ct); err != nil {
				t.Fatal(err)
			}
			if len(ct) == 0 {
				continue
			}
			if id, _ := secret.KeyIDOf(ct); id != kr.ID() {
				t.Fatalf("mixed state: %s of %s sealed with key %s, the data dir resolves to %s", col.AAD(), pk, id, kr.ID())
			}
			if _, err := kr.Open(ct, col.AAD()); err != nil {
				t.Fatalf("%s of %s does not open with the key: %v", col.AAD(), pk, err)
			}
			n++
		}
		rows.Close()
		if n == 0 {
			empty = append(empty, col.AAD())
		}
		out.fields += n
		out.columns++
	}
	if len(empty) > 0 {
		t.Fatalf("encrypted columns without data (seed them): %s", strings.Join(empty, ", "))
	}
	return out
}
