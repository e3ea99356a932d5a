package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestBackupBudget measures the budget with the real binary on
// SQLite: backup and restore of 10,000 servers and 1 million job-output
// chunks ≤ 60 s each, peak RSS ≤ 256 MiB (docs/benchmarks.md). It runs only
// with LCM_BACKUP_BENCH=1; LCM_BACKUP_BENCH_SERVERS and
// LCM_BACKUP_BENCH_CHUNKS scale it down on a busy machine.
//
//	LCM_BACKUP_BENCH=1 go test ./cmd/api -run TestBackupBudget -v -timeout 60m
func TestBackupBudget(t *testing.T) {
	if os.Getenv("LCM_BACKUP_BENCH") != "1" {
		t.Skip("set LCM_BACKUP_BENCH=1 to run the backup budget")
	}
	servers, chunks := envInt("LCM_BACKUP_BENCH_SERVERS", 10000), envInt("LCM_BACKUP_BENCH_CHUNKS", 1000000)
	env := []string{backup.EnvPassphrase + "=" + backupPassE2E}
	dir := t.TempDir()
	a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, Env: env})
	pw := a.AdminPassword
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	seedBulk(t, filepath.Join(dir, "data"), servers, chunks)
	dbInfo, _ := os.Stat(filepath.Join(dir, "data", store.SQLiteFileName))
	t.Logf("seeded %d servers, %d chunks in %s (lcm.db %d MiB)", servers, chunks, time.Since(t0).Round(time.Second), dbInfo.Size()>>20)

	a = testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, Env: env})
	tok := login(t, a, "admin", pw)
	t.Logf("before the backup: peak RSS of lcm-api %d MiB (start and an argon2id sign-in)", peakRSS(t, a.PID())>>20)
	t0 = time.Now()
	var made backup.Info
	if resp, body := a.Do("POST", "/api/v1/system/backups/trigger-now", tok, nil, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("trigger-now: %d %s", resp.StatusCode, body)
	}
	backupTook := time.Since(t0)
	backupRSS := peakRSS(t, a.PID())
	t.Logf("BACKUP: %s, file %d MiB, peak RSS of lcm-api %d MiB", backupTook.Round(time.Millisecond), made.Size>>20, backupRSS>>20)

	t0 = time.Now()
	a.Client.Timeout = 10 * time.Minute
	if resp, body := a.Do("POST", "/api/v1/system/backups/"+made.Name+"/restore", tok, nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("restore: %d %s", resp.StatusCode, body)
	}
	stageTook := time.Since(t0)
	stageRSS := peakRSS(t, a.PID())
	if code := a.Wait(30 * time.Second); code != health.ExitRestore {
		t.Fatalf("exit %d", code)
	}
	t1 := time.Now()
	a = testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, Env: env, NoWait: true})
	a.WaitHealthy(10 * time.Minute)
	applyTook := time.Since(t1)
	applyRSS := peakRSS(t, a.PID())
	t.Logf("RESTORE: verify+stage %s (peak RSS %d MiB), apply+start %s (peak RSS %d MiB), total %s",
		stageTook.Round(time.Millisecond), stageRSS>>20, applyTook.Round(time.Millisecond), applyRSS>>20, (stageTook + applyTook).Round(time.Millisecond))
	tok = login(t, a, "admin", pw)
	var list []map[string]any
	a.Do("GET", "/api/v1/servers", tok, nil, &list)
	if len(list) != servers {
		t.Fatalf("%d servers after the restore, want %d", len(list), servers)
	}
	for _, v := range []int64{backupRSS, stageRSS, applyRSS} {
		if v > 256<<20 {
			t.Errorf("peak RSS %d MiB over the 256 MiB budget", v>>20)
		}
	}
	if backupTook > time.Minute || stageTook+applyTook > time.Minute {
		t.Errorf("over the 60 s budget: backup %s, restore %s", backupTook, stageTook+applyTook)
	}
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
func seedBulk(t *testing.T, dataDir string, servers, chunks int) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DataDir: dataDir})
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
