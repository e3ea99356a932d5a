//go:build faults

package faults

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/topology"
)

// randomSecret is a fresh secret with a recognisable prefix.
func randomSecret(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// scenario is the result of touching every kind of secret LCM holds.
type scenario struct {
	// secrets by kind: what must never be found in plaintext at rest.
	secrets map[string]string
	// servers joined (ids), jobs run.
	servers []string
	jobs    []string
}

// scenarioOptions pick what the scenario uses.
type scenarioOptions struct {
	// realHost, when set, is also joined with its bootstrap password and
	// gets a Linux user (the real sshd and sudo of a Debian test host).
	realHost *testutil.TestHost
	segment  string
}

// runScenario touches every kind of secret through the proxy: the admin's
// generated password, a user's password and session, a TOTP secret and its
// recovery codes, an API key, servers joined with a bootstrap password and
// with a bootstrap private key (and the management key LCM generates), a
// Linux user's password (sealed to the worker that creates the account),
// an SMTP password, a webhook URL with a token and a signing secret, a
// registry password, a speech provider key, an agent enrollment token and
// the backup passphrase (backupPass, in the replicas' environment). Jobs
// run on a separate lcm-worker and write console output.
func runScenario(t *testing.T, top *topology.Topology, o scenarioOptions, backupPass string) scenario {
	t.Helper()
	if o.segment == "" {
		o.segment = "dc1"
	}
	sc := scenario{secrets: map[string]string{"admin password": top.AdminPassword, "backup passphrase": backupPass}}
	admin := top.Login()
	sc.secrets["admin session token"] = admin

	// A user with a password, TOTP and recovery codes, and a session.
	userPW := uniquePassword()
	top.Must(http.StatusCreated, "POST", "/api/v1/users", admin, map[string]any{"username": "sam", "first_name": "Sam", "last_name": "Operator",
		"email": "sam@example.org", "password": userPW, "roles": []string{"admin"}}, nil)
	sc.secrets["user password"] = userPW
	var login struct {
		Token string `json:"token"`
	}
	top.Must(http.StatusOK, "POST", "/api/v1/auth/login", "", map[string]string{"username": "sam", "password": userPW}, &login)
	sam := login.Token
	sc.secrets["user session token"] = sam
	var setup struct {
		Secret string `json:"secret"`
	}
	top.Must(http.StatusOK, "POST", "/api/v1/auth/2fa/setup", sam, nil, &setup)
	code, _ := totp.GenerateCode(setup.Secret, time.Now())
	var enabled struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}
	top.Must(http.StatusOK, "POST", "/api/v1/auth/2fa/enable", sam, map[string]string{"code": code}, &enabled)
	sc.secrets["TOTP secret"] = setup.Secret
	for i, c := range enabled.RecoveryCodes {
		sc.secrets["recovery code "+strconv.Itoa(i)] = c
	}
	if len(enabled.RecoveryCodes) == 0 {
		t.Fatal("no recovery codes")
	}
	key := top.APIKey(admin)
	sc.secrets["API key"] = key

	// Servers: fleetsim hosts joined with a password and with a key.
	hosts := top.StartFleet(2, "-latency", "20ms")
	bootPW := randomSecret("boot-pw-")
	sc.secrets["bootstrap password"] = bootPW
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(block))
	for i, line := range strings.Split(keyPEM, "\n") {
		if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
			sc.secrets["bootstrap private key line "+strconv.Itoa(i)] = line
		}
	}
	join := func(name, host string, port int, hostKey string, auth map[string]any) string {
		body := map[string]any{"name": name, "host": host, "port": port, "host_key": hostKey, "segment": o.segment}
		for k, v := range auth {
			body[k] = v
		}
		var joined struct {
			JobID  string `json:"job_id"`
			Server struct {
				ID string `json:"id"`
			} `json:"server"`
		}
		top.Must(http.StatusAccepted, "POST", "/api/v1/servers/join", key, body, &joined)
		top.WaitJobs([]string{joined.JobID}, 3*time.Minute, "success")
		sc.servers = append(sc.servers, joined.Server.ID)
		sc.jobs = append(sc.jobs, joined.JobID)
		return joined.Server.ID
	}
	for i, h := range hosts {
		host, port, _ := net.SplitHostPort(h.Addr)
		p, _ := strconv.Atoi(port)
		auth := map[string]any{"username": "debian", "auth": "password", "password": bootPW}
		if i == 1 {
			auth = map[string]any{"username": "debian", "auth": "key", "private_key": keyPEM}
		}
		join("secrets-sim-"+strconv.Itoa(i), host, p, h.HostKey, auth)
	}
	if h := o.realHost; h != nil {
		var probe struct {
			HostKey string `json:"host_key"`
		}
		top.Must(http.StatusOK, "POST", "/api/v1/servers/probe", key, map[string]any{"host": h.Host, "port": h.Port}, &probe)
		join("secrets-real", h.Host, h.Port, probe.HostKey, map[string]any{"username": testutil.BootstrapUser, "auth": "password", "password": h.Password})
		sc.secrets["test host bootstrap password"] = h.Password
	}
	// Jobs with console output on every server.
	for _, id := range sc.servers {
		var js jobStarted
		top.Must(http.StatusAccepted, "POST", "/api/v1/servers/"+id+"/packages/refresh", key, nil, &js)
		sc.jobs = append(sc.jobs, js.JobID)
	}
	top.WaitJobs(sc.jobs, 3*time.Minute, "success")

	// A Linux user whose password the person sets through the activation
	// link; its hash travels sealed to the worker creating the account.
	var lu struct {
		ID string `json:"id"`
	}
	top.Must(http.StatusCreated, "POST", "/api/v1/linux-users", admin, map[string]any{"username": "ivan", "full_name": "Ivan Petrov"}, &lu)
	var link struct {
		Token string `json:"token"`
	}
	top.Must(http.StatusCreated, "POST", "/api/v1/linux-users/"+lu.ID+"/activation-links/generate", admin, nil, &link)
	luPW := uniquePassword()
	top.Must(http.StatusOK, "POST", "/api/v1/linux-users/activation-links/consume", "", map[string]any{"token": link.Token, "password": luPW}, nil)
	sc.secrets["activation token"] = link.Token
	sc.secrets["Linux user password"] = luPW
	target := sc.servers[len(sc.servers)-1] // the real host when there is one
	var assigned jobStarted
	top.Must(http.StatusAccepted, "POST", "/api/v1/servers/"+target+"/assign-user", admin, map[string]any{"user_id": lu.ID}, &assigned)
	sc.jobs = append(sc.jobs, assigned.JobID)
	top.WaitJobs([]string{assigned.JobID}, 3*time.Minute, "success")

	// Notification channels: SMTP with a password (to a sink that demands
	// it), a webhook whose URL carries a token, with a signing secret.
	smtpPW := randomSecret("smtp-pw-")
	sink := testutil.StartSMTPSinkWith(t, testutil.SMTPSinkOptions{User: "alerts", Password: smtpPW, AuthWithoutTLS: true})
	sc.secrets["SMTP password"] = smtpPW
	var mail struct {
		ID string `json:"id"`
	}
	top.Must(http.StatusCreated, "POST", "/api/v1/notification-channels", admin, map[string]any{"name": "mail", "type": "smtp",
		"host": "127.0.0.1", "port": sink.Port, "tls": "none", "username": "alerts", "password": smtpPW, "from": "lcm@example.test",
		"to": []string{"ops@example.test"}}, &mail)
	ca := testutil.NewTestCA(t)
	var hits atomic.Int32
	hookToken := randomSecret("HOOKTOKEN")
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.HasSuffix(r.URL.Path, hookToken) {
			hits.Add(1)
		}
		_, _ = io.WriteString(w, "thanks")
	}))
	rcv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerCert(t, "127.0.0.1")}}
	rcv.StartTLS()
	t.Cleanup(rcv.Close)
	hookURL := rcv.URL + "/hooks/" + hookToken
	signing := randomSecret("signing-")
	sc.secrets["webhook URL"] = hookURL
	sc.secrets["webhook token"] = hookToken
	sc.secrets["webhook signing secret"] = signing
	var hook struct {
		ID string `json:"id"`
	}
	top.Must(http.StatusCreated, "POST", "/api/v1/notification-channels", admin, map[string]any{"name": "hook", "type": "webhook",
		"url": hookURL, "signingSecret": signing, "caPem": ca.CertPEM}, &hook)
	for _, id := range []string{mail.ID, hook.ID} {
		r := top.Must(http.StatusOK, "POST", "/api/v1/notification-channels/"+id+"/test", admin, nil, nil)
		if !strings.Contains(string(r.Body), `"ok":true`) {
			t.Fatalf("channel test: %s", r.Body)
		}
	}
	if hits.Load() == 0 {
		t.Fatal("the webhook was not delivered")
	}

	// Registry credentials, a speech provider key (verified against a
	// local stand-in of the provider's documented transcription API).
	regPW := randomSecret("registry-pw-")
	top.Must(http.StatusCreated, "POST", "/api/v1/settings/registries", admin, map[string]any{"host": "registry.example.test", "username": "robot",
		"password": regPW}, nil)
	sc.secrets["registry password"] = regPW
	speechKey := randomSecret("sk-")
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/audio/transcriptions" || r.Header.Get("Authorization") != "Bearer "+speechKey {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"text":"hello"}`)
	}))
	t.Cleanup(provider.Close)
	top.Must(http.StatusOK, "PUT", "/api/v1/settings/speech", admin, map[string]any{"provider": "openai", "apiKey": speechKey, "baseUrl": provider.URL}, nil)
	sc.secrets["speech API key"] = speechKey

	// An agent server's enrollment token.
	var agentSrv struct {
		ID string `json:"id"`
	}
	top.Must(http.StatusCreated, "POST", "/api/v1/servers/agent", admin, map[string]any{"name": "secrets-agent"}, &agentSrv)
	var tok struct {
		Token string `json:"token"`
	}
	top.Must(http.StatusCreated, "POST", "/api/v1/servers/"+agentSrv.ID+"/agent-token", admin, nil, &tok)
	sc.secrets["agent enrollment token"] = tok.Token

	// A backup, encrypted with the passphrase from the environment.
	top.Must(http.StatusCreated, "POST", "/api/v1/system/backups/trigger-now", admin, nil, nil)
	// A failed sign-in close to a real password.
	top.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "sam", "password": userPW + "x"}, nil)
	return sc
}

// addGenerated reads back what LCM generated itself and holds encrypted: each
// server's management private key and the Linux user's password hash.
func (sc *scenario) addGenerated(t *testing.T, top *topology.Topology) {
	t.Helper()
	ctx := context.Background()
	r := top.APIs[0]
	st, err := store.Open(ctx, store.Options{URL: top.DBURL, DataDir: r.DataDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kr, _, err := st.ResolveMasterKey(ctx, r.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	st.SetKeyring(kr)
	for i, id := range sc.servers {
		_, sec, err := st.ServerSecretsOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if sec.PrivateKey == "" {
			t.Fatalf("server %s has no management key", id)
		}
		for j, line := range strings.Split(sec.PrivateKey, "\n") {
			if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
				sc.secrets["management key "+strconv.Itoa(i)+" line "+strconv.Itoa(j)] = line
			}
		}
	}
	users, err := st.ListLinuxUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.PasswordHash != "" {
			sc.secrets["Linux user password hash "+u.Username] = u.PasswordHash
		}
	}
}

// uniquePassword is a random password without a repeated character, so
// the password policy (no character four times, no block three times)
// never refuses it.
func uniquePassword() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz23456789"
	b := []byte(alphabet)
	for i := len(b) - 1; i > 0; i-- {
		var r [1]byte
		_, _ = rand.Read(r[:])
		j := int(r[0]) % (i + 1)
		b[i], b[j] = b[j], b[i]
	}
	return string(b[:14]) + "-!"
}
