package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite"  // database/sql driver "sqlite"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/pquerna/otp/totp"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

const (
	backupPassE2E = "e2e-Backup-passphrase-7"
	tinaPassword  = "Tq8#vLz2!pR9wXc4"
)

// instanceSeed is what the test wrote into an instance and reads back
// after a restore.
type instanceSeed struct {
	adminPassword string
	serverID      string
	jobIDs        []string
	outputs       map[string]string
	totpSecret    string
	totpStep      int64
	apiKey        string
	projectID     string
	records       string
	tlsSHA        string
}

var tlsLogRe = regexp.MustCompile(`msg="TLS certificate" sha256=(\S+)`)

// TestBackupRestoreE2E seeds a rich instance through the real binary
// (a joined server with its SSH key, jobs with output, a user with 2FA, an
// API key, records), backs it up, restores it on the running instance
// (exit 42, changes made after the backup are gone, everyone signed out)
// and on a wiped, fresh instance from an upload, and reads every record,
// encrypted field and job output back; damaged, foreign-passphrase and
// truncated uploads are refused with nothing changed. SQLite → SQLite and
// PostgreSQL → PostgreSQL.
func TestBackupRestoreE2E(t *testing.T) {
	table := fleetsim.DefaultTable()
	fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 5, Security: 2})
	fl, err := fleetsim.Start(fleetsim.Config{N: 1, Latency: 50 * time.Millisecond, OutputBytes: 4096, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fl.Close() })
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			fresh := ""
			if db.URL != "" {
				fresh = testutil.PostgresURL(t)
			}
			testBackupRestore(t, fl.Instances[0], db.URL, fresh)
		})
	}
}

func testBackupRestore(t *testing.T, inst *fleetsim.Instance, dbURL, freshURL string) {
	env := []string{backup.EnvPassphrase + "=" + backupPassE2E}
	dir := t.TempDir()
	a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, DatabaseURL: dbURL, Env: env})
	a, seed := seedInstance(t, a, inst, dbURL, env)
	tok := login(t, a, "admin", seed.adminPassword)

	// The instance's database is made one of an older LCM before the
	// backup (a schema migration and a data migration undone, with their
	// records), so the restore must migrate it: on SQLite and PostgreSQL.
	if resp, body := a.Do("POST", "/api/v1/apikeys", tok, map[string]any{"name": "legacy", "scope": "read"}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("api key: %d %s", resp.StatusCode, body)
	}
	makeOlder(t, dbURL, filepath.Join(dir, "data", store.SQLiteFileName))

	// A backup now, from the API.
	var made backup.Info
	if resp, body := a.Do("POST", "/api/v1/system/backups/trigger-now", tok, nil, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("trigger-now: %d %s", resp.StatusCode, body)
	}
	var st backup.Status
	a.Do("GET", "/api/v1/system/backups", tok, nil, &st)
	if len(st.Backups) != 1 || st.Backups[0].Name != made.Name || st.Passphrase != "set" || st.Database != "ok" || st.LastSuccess == nil {
		t.Fatalf("list after trigger: %+v", st)
	}
	file := download(t, a, tok, made.Name)
	if int64(len(file)) != made.Size || !bytes.HasPrefix(file, []byte(backup.Magic)) {
		t.Fatalf("download: %d bytes, listed %d", len(file), made.Size)
	}
	for _, secretText := range []string{seed.totpSecret, seed.apiKey, "BEGIN OPENSSH PRIVATE KEY", "lcm-e2e-zone"} {
		if bytes.Contains(file, []byte(secretText)) {
			t.Fatalf("the backup file holds %q in the clear", secretText)
		}
	}

	// A change after the backup, then a restore from the list on the
	// running instance: exit 42, the next start applies it.
	a.Do("POST", "/api/v1/users", tok, map[string]any{"username": "late", "first_name": "Late", "last_name": "User",
		"email": "late@example.com", "password": tinaPassword, "roles": []string{"manager"}}, nil)
	if resp, body := a.Do("POST", "/api/v1/system/backups/"+made.Name+"/restore", tok, nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("restore: %d %s", resp.StatusCode, body)
	}
	if code := a.Wait(20 * time.Second); code != health.ExitRestore {
		t.Fatalf("exit code after staging a restore: %d, want %d\n%s", code, health.ExitRestore, a.Stderr())
	}
	a = testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, DatabaseURL: dbURL, Env: env})
	if !strings.Contains(a.Stderr(), "restore applied") {
		t.Fatalf("no restore applied at start:\n%s", a.Stderr())
	}
	checkMigrated(t, a, seed.adminPassword)
	if resp, _ := a.Do("GET", "/api/v1/users", tok, nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a session from before the restore: %d, want 401 (everyone signed out)", resp.StatusCode)
	}
	tok = login(t, a, "admin", seed.adminPassword)
	var users []struct{ Username string }
	a.Do("GET", "/api/v1/users", tok, nil, &users)
	for _, u := range users {
		if u.Username == "late" {
			t.Fatal("the user created after the backup survived the restore")
		}
	}
	checkInstance(t, a, seed)

	// Wipe: the instance is gone (directory, database); a fresh one comes
	// up on an empty database with another admin password.
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	wiped := t.TempDir()
	b := testutil.StartAPI(t, testutil.APIOptions{Dir: wiped, Dev: true, DatabaseURL: freshURL,
		Env: []string{backup.EnvPassphrase + "=another-Passphrase-42"}})
	freshPW := b.AdminPassword
	btok := login(t, b, "admin", freshPW)
	// Refusals leave the fresh instance as it was.
	for _, c := range []struct {
		name string
		data []byte
		code string
	}{
		{"foreign passphrase", file, "backup_wrong_passphrase"},
	} {
		if got := uploadCode(t, b, btok, c.data); got != c.code {
			t.Fatalf("%s: %s, want %s", c.name, got, c.code)
		}
	}
	b.Stop()
	b = testutil.StartAPI(t, testutil.APIOptions{Dir: wiped, Dev: true, DatabaseURL: freshURL, Env: env})
	btok = login(t, b, "admin", freshPW)
	tampered := bytes.Clone(file)
	tampered[len(tampered)/2] ^= 0x40
	for _, c := range []struct {
		name string
		data []byte
		code string
	}{
		{"truncated", file[:len(file)*2/3], "backup_truncated"},
		{"tampered", tampered, "backup_corrupt"},
		{"not a backup", []byte("hello, this is not a backup"), "backup_not_a_backup"},
	} {
		if got := uploadCode(t, b, btok, c.data); got != c.code {
			t.Fatalf("%s: %s, want %s", c.name, got, c.code)
		}
	}
	if _, err := os.Stat(filepath.Join(wiped, "data", backup.StagedDirName)); !os.IsNotExist(err) {
		t.Fatalf("a refused upload left a staged restore: %v", err)
	}
	if resp, _ := b.Do("GET", "/api/v1/servers", btok, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the fresh instance after refusals: %d", resp.StatusCode)
	}
	// The real upload (multipart, as the UI sends it).
	if got := uploadCode(t, b, btok, file); got != "" {
		t.Fatalf("upload: %s", got)
	}
	if code := b.Wait(20 * time.Second); code != health.ExitRestore {
		t.Fatalf("exit code after an uploaded restore: %d\n%s", code, b.Stderr())
	}
	b = testutil.StartAPI(t, testutil.APIOptions{Dir: wiped, Dev: true, DatabaseURL: freshURL, Env: env})
	if b.AdminPassword != "" {
		t.Fatal("the restored instance created a new admin")
	}
	checkMigrated(t, b, seed.adminPassword)
	checkInstance(t, b, seed)
}

// seedInstance writes the rich instance through the API.
func seedInstance(t *testing.T, ap *testutil.API, inst *fleetsim.Instance, dbURL string, env []string) (*testutil.API, instanceSeed) {
	t.Helper()
	a := ap
	s := instanceSeed{adminPassword: a.AdminPassword, outputs: map[string]string{}}
	tok := login(t, a, "admin", a.AdminPassword)
	if m := tlsLogRe.FindStringSubmatch(a.Stderr()); m != nil {
		s.tlsSHA = m[1]
	} else {
		t.Fatalf("no TLS fingerprint logged:\n%s", a.Stderr())
	}

	// A server with its SSH key (stored encrypted, written through the
	// store as a join would: the simulator cannot prove a join), and jobs
	// with output on it.
	key, err := actions.NewManagementKey("e2e")
	if err != nil {
		t.Fatal(err)
	}
	s.serverID = addServerOffline(t, a, dbURL, inst, key)
	a = testutil.StartAPI(t, testutil.APIOptions{Dir: a.Dir, Dev: true, DatabaseURL: dbURL, Env: env})
	tok = login(t, a, "admin", s.adminPassword)
	var started struct {
		JobID string `json:"job_id"`
	}
	for _, path := range []string{"/packages/refresh", "/packages/upgrade-security"} {
		if resp, body := a.Do("POST", "/api/v1/servers/"+s.serverID+path, tok, nil, &started); resp.StatusCode/100 != 2 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		waitJob(t, a, tok, started.JobID, "success")
		s.jobIDs = append(s.jobIDs, started.JobID)
	}
	if resp, body := a.Do("POST", "/api/v1/servers/"+s.serverID+"/packages/upgrade-security", tok, nil, &started); resp.StatusCode/100 != 2 {
		t.Fatalf("upgrade-security: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, tok, started.JobID, "success")
	s.jobIDs = append(s.jobIDs, started.JobID)
	for _, j := range s.jobIDs {
		s.outputs[j] = jobOutput(t, a, tok, j)
	}
	if s.outputs[started.JobID] == "" {
		t.Fatal("the upgrade job has no output")
	}

	// A user with 2FA (TOTP secret stored encrypted).
	a.Do("POST", "/api/v1/users", tok, map[string]any{"username": "tina", "first_name": "Tina", "last_name": "Totp",
		"email": "tina@example.com", "password": tinaPassword, "roles": []string{"admin"}}, nil)
	ttok := login(t, a, "tina", tinaPassword)
	var setup struct {
		Secret string `json:"secret"`
	}
	if resp, body := a.Do("POST", "/api/v1/auth/2fa/setup", ttok, nil, &setup); resp.StatusCode != http.StatusOK {
		t.Fatalf("2fa setup: %d %s", resp.StatusCode, body)
	}
	now := time.Now()
	code, _ := totp.GenerateCode(setup.Secret, now)
	if resp, body := a.Do("POST", "/api/v1/auth/2fa/enable", ttok, map[string]string{"code": code}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("2fa enable: %d %s", resp.StatusCode, body)
	}
	s.totpSecret, s.totpStep = setup.Secret, now.Unix()/30

	// An API key (stored as a hash).
	var k struct {
		Key string `json:"key"`
	}
	if resp, body := a.Do("POST", "/api/v1/apikeys", tok, map[string]any{"name": "ci", "scope": "read"}, &k); resp.StatusCode != http.StatusCreated {
		t.Fatalf("api key: %d %s", resp.StatusCode, body)
	}
	s.apiKey = k.Key

	// Records: a project, a zone, a record set.
	var project struct {
		ID string `json:"id"`
	}
	if resp, body := a.Do("POST", "/api/v1/projects/create", tok, map[string]any{"name": "lcm-e2e-project"}, &project); resp.StatusCode != http.StatusCreated {
		t.Fatalf("project: %d %s", resp.StatusCode, body)
	}
	s.projectID = project.ID
	var zone struct {
		ID string `json:"id"`
	}
	if resp, body := a.Do("POST", "/api/v1/projects/"+project.ID+"/zones/create", tok, map[string]any{"name": "lcm-e2e-zone.example"}, &zone); resp.StatusCode != http.StatusCreated {
		t.Fatalf("zone: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("POST", "/api/v1/zones/"+zone.ID+"/record-sets/create", tok, map[string]any{"name": "www", "type": "A", "records": []string{"192.0.2.9"}}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("record set: %d %s", resp.StatusCode, body)
	}
	_, body := a.Do("GET", "/api/v1/zones/"+zone.ID+"/record-sets", tok, nil, nil)
	s.records = string(body)
	if !strings.Contains(s.records, "192.0.2.9") {
		t.Fatalf("record sets: %s", s.records)
	}
	return a, s
}

// addServerOffline stops the instance and stores a server with its key
// through the store (the instance's own master key seals it).
func addServerOffline(t *testing.T, a *testutil.API, dbURL string, inst *fleetsim.Instance, key string) string {
	t.Helper()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dataDir := filepath.Join(a.Dir, "data")
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
	host, port := splitHostPort(t, inst.Addr)
	srv, err := st.CreateServer(ctx, store.NewServer{
		Server: domain.Server{Name: "bk-web-01", Host: host, Port: port, Transport: domain.TransportSSH, Status: domain.ServerGreen,
			Joined: true, AuthMethod: domain.AuthKey, HostKey: inst.AuthorizedHostKey(), PackageFamily: "apt"},
		Secrets: store.ServerSecrets{Username: domain.ManagementUser, PrivateKey: key},
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv.ID
}

// checkInstance reads everything seedInstance wrote back.
func checkInstance(t *testing.T, a *testutil.API, s instanceSeed) {
	t.Helper()
	tok := login(t, a, "admin", s.adminPassword)
	// Job output, byte for byte.
	for j, want := range s.outputs {
		if got := jobOutput(t, a, tok, j); got != want {
			t.Fatalf("output of job %s after the restore: %d bytes, want %d", j, len(got), len(want))
		}
	}
	// The server's SSH key decrypts: a new job on it succeeds.
	var started struct {
		JobID string `json:"job_id"`
	}
	if resp, body := a.Do("POST", "/api/v1/servers/"+s.serverID+"/refresh-all", tok, nil, &started); resp.StatusCode/100 != 2 {
		t.Fatalf("refresh after the restore: %d %s", resp.StatusCode, body)
	}
	waitJob(t, a, tok, started.JobID, "success")
	// The TOTP secret decrypts: tina signs in with a code.
	var ch e2eLogin
	if resp, body := a.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "tina", "password": tinaPassword}, &ch); resp.StatusCode != http.StatusOK || !ch.TwoFactorRequired {
		t.Fatalf("tina login: %d %s", resp.StatusCode, body)
	}
	for time.Now().Unix()/30 <= s.totpStep {
		time.Sleep(time.Second) // the enabling code's step is spent
	}
	code, _ := totp.GenerateCode(s.totpSecret, time.Now())
	var done e2eLogin
	if resp, body := a.Do("POST", "/api/v1/auth/login/2fa", "", map[string]string{"challenge": ch.Challenge, "code": code}, &done); resp.StatusCode != http.StatusOK || done.Token == "" {
		t.Fatalf("tina 2fa after the restore: %d %s", resp.StatusCode, body)
	}
	// The API key still works.
	if resp, body := a.Do("GET", "/api/v1/servers", s.apiKey, nil, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "bk-web-01") {
		t.Fatalf("api key after the restore: %d %s", resp.StatusCode, body)
	}
	// Records.
	var zones []struct {
		ID string `json:"id"`
	}
	a.Do("GET", "/api/v1/projects/"+s.projectID+"/zones", tok, nil, &zones)
	if len(zones) != 1 {
		t.Fatalf("zones after the restore: %+v", zones)
	}
	if _, body := a.Do("GET", "/api/v1/zones/"+zones[0].ID+"/record-sets", tok, nil, nil); string(body) != s.records {
		t.Fatalf("record sets after the restore:\n%s\nwant\n%s", body, s.records)
	}
	// The TLS certificate and its (encrypted) key are the backup's.
	if m := tlsLogRe.FindStringSubmatch(a.Stderr()); m == nil || m[1] != s.tlsSHA {
		t.Fatalf("TLS certificate after the restore: %v, want %s", m, s.tlsSHA)
	}
}

// makeOlder turns the instance's database into one of an LCM from before
// the last schema migration (its table and its record gone) and before the
// API-key scopes (the data migration's record gone, the key "legacy"
// without a scope), through the database itself: the SQLite file at
// sqlitePath, or the PostgreSQL database at dbURL.
func makeOlder(t *testing.T, dbURL, sqlitePath string) {
	t.Helper()
	driver, dsn := "sqlite", sqlitePath
	if dbURL != "" {
		driver, dsn = "pgx", dbURL
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"DROP TABLE speech_settings",
		"DELETE FROM schema_migrations WHERE id = 'portal/002_speech_settings'",
		"UPDATE api_keys SET scope = '' WHERE name = 'legacy'",
		"DELETE FROM update_migrations WHERE name = 'identity/api_key_scopes_readwrite'",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// checkMigrated: the start that applied the older backup ran the schema
// migration and the version-bound data migration it lacked (version.json
// already named the running version), and their effects are there: the
// speech settings answer, the key without a scope is readwrite again, the
// other key kept its scope.
func checkMigrated(t *testing.T, a *testutil.API, adminPassword string) {
	t.Helper()
	for _, want := range []string{"migration=portal/002_speech_settings", "ran the data migrations the database lacked",
		"identity/api_key_scopes_readwrite"} {
		if !strings.Contains(a.Stderr(), want) {
			t.Fatalf("the older backup's database was not migrated (no %q):\n%s", want, a.Stderr())
		}
	}
	tok := login(t, a, "admin", adminPassword)
	if resp, body := a.Do("GET", "/api/v1/settings/speech", tok, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("speech settings after migrating the restored database: %d %s", resp.StatusCode, body)
	}
	var keys []struct{ Name, Scope string }
	if resp, body := a.Do("GET", "/api/v1/apikeys", tok, nil, &keys); resp.StatusCode != http.StatusOK {
		t.Fatalf("api keys: %d %s", resp.StatusCode, body)
	}
	scopes := map[string]string{}
	for _, k := range keys {
		scopes[k.Name] = k.Scope
	}
	if scopes["legacy"] != "readwrite" || scopes["ci"] != "read" {
		t.Fatalf("api key scopes after the data migration: %v, want legacy readwrite and ci read", scopes)
	}
}

func download(t *testing.T, a *testutil.API, tok, name string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", a.BaseURL+"/api/v1/system/backups/"+name+"/download", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := a.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %d %s", resp.StatusCode, b)
	}
	return b
}

// uploadCode uploads data as a multipart form and returns the error code
// ("" for 202 staged).
func uploadCode(t *testing.T, a *testutil.API, tok string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	bd := "lcm-e2e-boundary"
	fmt.Fprintf(&body, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.lcmbak\"\r\nContent-Type: application/octet-stream\r\n\r\n", bd)
	body.Write(data)
	fmt.Fprintf(&body, "\r\n--%s--\r\n", bd)
	req, _ := http.NewRequest("POST", a.BaseURL+"/api/v1/system/backups/restore-upload", &body)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "multipart/form-data; boundary="+bd)
	resp, err := a.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusAccepted {
		return ""
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	m := regexp.MustCompile(`"code":"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("upload: %s", b)
	}
	return string(m[1])
}

func splitHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	var p int
	fmt.Sscan(addr[i+1:], &p)
	return addr[:i], p
}
