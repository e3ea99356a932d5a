package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestBackupBudget measures the budget with the real binary:
// backup and restore of 10,000 servers and 1 million job-output chunks
// ≤ 60 s each, peak RSS ≤ 256 MiB (docs/benchmarks.md). On SQLite by
// default; LCM_BACKUP_BENCH_DB=postgres measures PostgreSQL (pg_dump and
// pg_restore run as lcm-api's children: their peak RSS is logged by
// lcm-api and counted beside its own). It runs only with
// LCM_BACKUP_BENCH=1; LCM_BACKUP_BENCH_SERVERS and LCM_BACKUP_BENCH_CHUNKS
// scale it down on a busy machine.
//
//	LCM_BACKUP_BENCH=1 go test ./cmd/api -run TestBackupBudget -v -timeout 60m
//	LCM_BACKUP_BENCH=1 LCM_BACKUP_BENCH_DB=postgres go test ./cmd/api -run TestBackupBudget -v -timeout 60m
func TestBackupBudget(t *testing.T) {
	if os.Getenv("LCM_BACKUP_BENCH") != "1" {
		t.Skip("set LCM_BACKUP_BENCH=1 to run the backup budget")
	}
	servers, chunks := envInt("LCM_BACKUP_BENCH_SERVERS", 10000), envInt("LCM_BACKUP_BENCH_CHUNKS", 1000000)
	dbURL := ""
	if os.Getenv("LCM_BACKUP_BENCH_DB") == "postgres" {
		dbURL = testutil.PostgresURL(t)
	}
	env := []string{backup.EnvPassphrase + "=" + backupPassE2E}
	dir := t.TempDir()
	a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, Env: env, DatabaseURL: dbURL})
	pw := a.AdminPassword
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	seedBulk(t, filepath.Join(dir, "data"), dbURL, servers, chunks)
	size := databaseSize(t, dir, dbURL)
	t.Logf("seeded %d servers, %d chunks in %s (database %d MiB)", servers, chunks, time.Since(t0).Round(time.Second), size>>20)

	a = testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, Env: env, DatabaseURL: dbURL})
	tok := login(t, a, "admin", pw)
	t.Logf("before the backup: peak RSS of lcm-api %d MiB (start and an argon2id sign-in)", peakRSS(t, a.PID())>>20)
	t0 = time.Now()
	var made backup.Info
	a.Client.Timeout = 10 * time.Minute
	dumpWatch := watchChild(a.PID(), "pg_dump")
	if resp, body := a.Do("POST", "/api/v1/system/backups/trigger-now", tok, nil, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("trigger-now: %d %s", resp.StatusCode, body)
	}
	backupTook := time.Since(t0)
	backupRSS := peakRSS(t, a.PID())
	dumpRSS := dumpWatch()
	t.Logf("BACKUP: %s, file %d MiB, peak RSS of lcm-api %d MiB, of pg_dump %d MiB", backupTook.Round(time.Millisecond), made.Size>>20, backupRSS>>20, dumpRSS>>20)

	t0 = time.Now()
	if resp, body := a.Do("POST", "/api/v1/system/backups/"+made.Name+"/restore", tok, nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("restore: %d %s", resp.StatusCode, body)
	}
	stageTook := time.Since(t0)
	stageRSS := peakRSS(t, a.PID())
	if code := a.Wait(30 * time.Second); code != health.ExitRestore {
		t.Fatalf("exit %d", code)
	}
	t1 := time.Now()
	a = testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, Env: env, DatabaseURL: dbURL, NoWait: true})
	restoreWatch := watchChild(a.PID(), "pg_restore")
	a.WaitHealthy(10 * time.Minute)
	applyTook := time.Since(t1)
	applyRSS := peakRSS(t, a.PID())
	restoreRSS := restoreWatch()
	t.Logf("RESTORE: verify+stage %s (peak RSS %d MiB), apply+start %s (peak RSS of lcm-api %d MiB, of pg_restore %d MiB), total %s",
		stageTook.Round(time.Millisecond), stageRSS>>20, applyTook.Round(time.Millisecond), applyRSS>>20, restoreRSS>>20, (stageTook + applyTook).Round(time.Millisecond))
	tok = login(t, a, "admin", pw)
	var list []map[string]any
	a.Do("GET", "/api/v1/servers", tok, nil, &list)
	if len(list) != servers {
		t.Fatalf("%d servers after the restore, want %d", len(list), servers)
	}
	for _, v := range []int64{backupRSS, stageRSS, applyRSS, dumpRSS, restoreRSS} {
		if v > 256<<20 {
			t.Errorf("peak RSS %d MiB over the 256 MiB budget", v>>20)
		}
	}
	if backupTook > time.Minute || stageTook+applyTook > time.Minute {
		t.Errorf("over the 60 s budget: backup %s, restore %s", backupTook, stageTook+applyTook)
	}
}

// watchChild samples the peak RSS (VmHWM) of lcm-api's child named comm
// (pg_dump, pg_restore) every 20 ms until the returned func is called,
// which returns the highest value seen in bytes (0 when no such child ran,
// as on SQLite). getrusage's ru_maxrss is no use here: Go starts children
// with vfork, so a child's maxrss includes the parent's memory.
func watchChild(parent int, comm string) func() int64 {
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				pid, err := strconv.Atoi(e.Name())
				if err != nil {
					continue
				}
				st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				if err != nil || !strings.Contains(string(st), "("+comm+")") {
					continue
				}
				f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
				if len(f) < 2 || f[1] != strconv.Itoa(parent) {
					continue
				}
				status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
				if err != nil {
					continue
				}
				for _, l := range strings.Split(string(status), "\n") {
					if strings.HasPrefix(l, "VmHWM:") {
						kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
						if kb<<10 > peak.Load() {
							peak.Store(kb << 10)
						}
					}
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// databaseSize is the size of lcm.db or of the PostgreSQL database.
func databaseSize(t *testing.T, dir, dbURL string) int64 {
	t.Helper()
	if dbURL == "" {
		fi, err := os.Stat(filepath.Join(dir, "data", store.SQLiteFileName))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow("SELECT pg_database_size(current_database())").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

// peakRSS reads VmHWM of a process.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// seedBulk writes servers (with encrypted keys) and jobs holding the
// output chunks (encrypted, ~200 bytes each, 1,000 per job) through the store.
func seedBulk(t *testing.T, dataDir, dbURL string, servers, chunks int) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: dbURL, DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kr, _, err := st.ResolveMasterKey(ctx, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	st.SetKeyring(kr)
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\n" + strings.Repeat("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n", 5) + "-----END OPENSSH PRIVATE KEY-----\n"
	ids := make([]string, 0, servers)
	for i := 0; i < servers; i++ {
		srv, err := st.CreateServer(ctx, store.NewServer{
			Server: domain.Server{Name: fmt.Sprintf("bench-%05d", i), Host: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Port: 22,
				Transport: domain.TransportSSH, Status: domain.ServerGreen, Joined: true, AuthMethod: domain.AuthKey,
				HostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl", PackageFamily: "apt"},
			Secrets: store.ServerSecrets{Username: domain.ManagementUser, PrivateKey: key},
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, srv.ID)
	}
	line := []byte("Get:1 http://deb.debian.org/debian bookworm/main amd64 libssl3 amd64 3.0.15-1~deb12u1 [2,025 kB]\nUnpacking libssl3:amd64 (3.0.15-1~deb12u1) over (3.0.14-1~deb12u2) ...\n")
	const perJob = 1000
	now := time.Now().UTC()
	for done := 0; done < chunks; {
		job := domain.Job{ID: uuid.NewString(), Kind: domain.JobUpgradeSecurity, ServerID: ids[(done/perJob)%len(ids)], Segment: "default",
			Status: domain.JobSuccess, CreatedAt: now, FinishedAt: &now}
		if err := st.CreateJob(ctx, job); err != nil {
			t.Fatal(err)
		}
		batch := make([]store.ChunkIn, 0, perJob)
		for s := 0; s < perJob && done < chunks; s++ {
			batch = append(batch, store.ChunkIn{JobID: job.ID, OutputChunk: domain.OutputChunk{Seq: int64(s), Offset: int64(s * len(line)), Data: line}})
			done++
		}
		if err := st.AppendOutput(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
}
