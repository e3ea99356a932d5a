package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/agentgw"
	"github.com/lcmproject/lcm/internal/agentsim"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/bus/bustest"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/tlscert"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, &out, &out); err != nil || !strings.HasPrefix(out.String(), "lcm-agentgw ") {
		t.Fatalf("%v %q", err, out.String())
	}
}

// TestOptionsFromEnv: every flag has an LCM_AGENTGW_* variable, a flag
// wins over it, and the NATS password comes from a file flag, the
// gateway's own variable (or its _FILE) or the older LCM_NATS_PASSWORD;
// two sources at once are refused.
func TestOptionsFromEnv(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("from-file\n"), 0o600)
	for _, k := range []string{"LCM_NATS_PASSWORD", "LCM_NATS_PASSWORD_FILE", "LCM_AGENTGW_NATS_PASSWORD", "LCM_AGENTGW_NATS_PASSWORD_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("LCM_AGENTGW_NATS_URL", "nats://env:4222")
	t.Setenv("LCM_AGENTGW_LISTEN", "127.0.0.1:9999")
	o, err := parseFlags([]string{"-nats-url", "nats://flag:4222"}, io.Discard)
	if err != nil || o.natsURL != "nats://flag:4222" || o.listen != "127.0.0.1:9999" {
		t.Fatalf("%+v %v", o, err)
	}
	tests := []struct {
		name    string
		env     map[string]string
		file    string
		want    string
		wantErr bool
	}{
		{"gateway variable", map[string]string{"LCM_AGENTGW_NATS_PASSWORD": "gw"}, "", "gw", false},
		{"gateway file", map[string]string{"LCM_AGENTGW_NATS_PASSWORD_FILE": pw}, "", "from-file", false},
		{"older variable", map[string]string{"LCM_NATS_PASSWORD": "old"}, "", "old", false},
		{"older file", map[string]string{"LCM_NATS_PASSWORD_FILE": pw}, "", "from-file", false},
		{"flag file wins", map[string]string{"LCM_NATS_PASSWORD": "old"}, pw, "from-file", false},
		{"two sources", map[string]string{"LCM_NATS_PASSWORD": "old", "LCM_AGENTGW_NATS_PASSWORD": "gw"}, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			got, err := options{natsPasswordFile: tt.file}.natsPassword()
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}

func TestFlagsRequired(t *testing.T) {
	err := run(context.Background(), nil, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-tls-cert") || !strings.Contains(err.Error(), "-nats-url") {
		t.Fatalf("missing flags: %v", err)
	}
}

// TestServesAgentListener runs the gateway against a real NATS with
// JetStream — lcm-api's embedded server listening with TLS and users, as in
// production — under the least-privilege account bus.AgentGatewayUser: the
// listener answers, a simulated agent enrolls (KV compare-and-swap), runs a
// command sent from the control plane and is kicked after a revoke; then a
// clean stop.
func TestServesAgentListener(t *testing.T) {
	dir := t.TempDir()
	api, natsURL, caFile := leastPrivilegeNATS(t)
	certPEM, keyPEM, err := tlscert.Generate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, []byte(certPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(keyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	// Configured the way a container is: environment, the password in a
	// secret file.
	pwFile := filepath.Join(dir, "nats_password")
	if err := os.WriteFile(pwFile, []byte(gwPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"LCM_AGENTGW_LISTEN": addr, "LCM_AGENTGW_TLS_CERT": certFile, "LCM_AGENTGW_TLS_KEY": keyFile,
		"LCM_AGENTGW_NATS_URL": natsURL, "LCM_AGENTGW_NATS_USER": gwUser, "LCM_AGENTGW_NATS_CA": caFile,
		"LCM_AGENTGW_METRICS_ADDR": metricsAddr, "LCM_AGENTGW_NATS_PASSWORD_FILE": pwFile} {
		t.Setenv(k, v)
	}

	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, logs, logs) }()
	defer func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	}()
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	var resp *http.Response
	for {
		resp, err = cl.Get("https://" + addr + "/other")
		if err == nil || time.Now().After(deadline) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err != nil {
		t.Fatalf("listener never answered: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /other: %d", resp.StatusCode)
	}
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Subprotocols: []string{"mqtt"}}
	ws, wresp, err := d.Dial("wss://"+addr+"/mqtt", nil)
	if err != nil || wresp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", wresp, err)
	}
	ws.Close()
	// Its own metrics listener answers with the gateway's figures.
	mresp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mbody, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{"lcm_agentgw_connected_agents ", "process_resident_memory_bytes "} {
		if !strings.Contains(string(mbody), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if hresp, err := http.Get("http://" + metricsAddr + "/healthz"); err != nil || hresp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", hresp, err)
	} else {
		hresp.Body.Close()
	}

	// An agent enrolls and runs a command through the restricted gateway.
	creds, err := api.AgentCredentials(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gwURL := "wss://" + addr + "/mqtt"
	pair, _ := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	fp := agentproto.FingerprintSHA256(pair.Certificate[0])
	token, _, err := agentgw.Enroll(context.Background(), creds, "server-1", gwURL, fp)
	if err != nil {
		t.Fatal(err)
	}
	o := &agentsim.Options{URL: gwURL, Fingerprint: fp, Respond: func(_ context.Context, c *agentproto.Command, stdout, _ io.Writer) int {
		_, _ = io.WriteString(stdout, "ran: "+c.Cmd+"\n")
		return 7
	}}
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	a, err := agentsim.Enroll(dctx, o, token)
	if err != nil {
		t.Fatalf("enrollment through the restricted gateway: %v", err)
	}
	conn, err := agentsim.Dial(dctx, o, a)
	if err != nil {
		t.Fatalf("agent connect: %v", err)
	}
	var out bytes.Buffer
	res, err := agentgw.NewExecutor(api, a.ID).Run(context.Background(), remote.Command{Cmd: "uptime", Stdout: &out})
	if err != nil || res.ExitCode != 7 || out.String() != "ran: uptime\n" {
		t.Fatalf("command through the restricted gateway: %v %+v %q", err, res, out.String())
	}
	// A revoke and a kick reach the gateway: the agent is disconnected.
	if err := agentgw.Revoke(context.Background(), creds, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := agentgw.Kick(api, a.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-conn.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("revoked agent still connected after a kick")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop")
	}
}

const (
	gwUser     = "agentgw"
	gwPassword = "agentgw-pass"
)

// leastPrivilegeNATS starts lcm-api's embedded NATS listening with TLS and
// the API's full user plus the gateway's restricted one, with every stream
// and bucket created (bus.Open as lcm-api does). It returns the API's bus,
// the URL and the CA file to trust.
func leastPrivilegeNATS(t *testing.T) (*bus.Bus, string, string) {
	t.Helper()
	srv := bustest.Start(t, bus.AgentGatewayUser(gwUser, gwPassword))
	return srv.API, srv.URL, srv.CAFile
}

// TestGatewayUserIsLeastPrivilege connects with the gateway's NATS account
// and tries what it must not do: publish on job subjects, read job events,
// create or delete streams, open other buckets. The server refuses each.
func TestGatewayUserIsLeastPrivilege(t *testing.T) {
	api, url, caFile := leastPrivilegeNATS(t)
	perr := make(chan error, 16)
	nc, err := nats.Connect(url, nats.UserInfo(gwUser, gwPassword), nats.RootCAs(caFile),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { perr <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	violation := func(what, subject string) {
		t.Helper()
		select {
		case err := <-perr:
			if !strings.Contains(err.Error(), "Permissions Violation") || !strings.Contains(err.Error(), subject) {
				t.Errorf("%s: unexpected error %v", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: no permissions violation reported", what)
		}
	}
	for _, subj := range []string{bus.JobSubject("default", "srv-1"), bus.JobStateSubject("job-1"), bus.SubjectCredsRequest,
		bus.AgentSubject(agentproto.NewID(), "cmd"), "lcm.settings.changed"} {
		if err := nc.Publish(subj, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		violation("publish "+subj, subj)
	}
	for _, subj := range []string{bus.SubjectJobEventsAll, bus.SubjectJobsAll, "lcm.agent.*.res", ">"} {
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		violation("subscribe "+subj, subj)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 2*time.Second) }
	c1, x1 := short()
	if _, err := js.CreateStream(c1, jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}}); err == nil {
		t.Error("the gateway account created a stream")
	}
	x1()
	c2, x2 := short()
	if err := js.DeleteStream(c2, bus.StreamJobs); err == nil {
		t.Error("the gateway account deleted the job stream")
	}
	x2()
	c3, x3 := short()
	if _, err := js.Publish(c3, bus.JobSubject("default", "srv-1"), []byte("{}")); err == nil {
		t.Error("the gateway account published a job")
	}
	x3()
	for _, bucket := range []string{bus.BucketLocks, bus.BucketAuth} {
		c4, x4 := short()
		if _, err := js.KeyValue(c4, bucket); err == nil {
			t.Errorf("the gateway account opened bucket %s", bucket)
		}
		x4()
	}
	c5, x5 := short()
	if _, err := js.CreateKeyValue(c5, jetstream.KeyValueConfig{Bucket: "EVIL"}); err == nil {
		t.Error("the gateway account created a bucket")
	}
	x5()
	// Nothing changed on the server.
	for _, name := range []string{"EVIL", "KV_EVIL"} {
		if _, err := api.JS.Stream(ctx, name); err == nil {
			t.Errorf("stream %s exists", name)
		}
	}
	if _, err := api.JS.Stream(ctx, bus.StreamJobs); err != nil {
		t.Errorf("job stream: %v", err)
	}
	// What it needs works: the agent bucket, read and written.
	kv, err := js.KeyValue(ctx, bus.BucketAgents)
	if err != nil {
		t.Fatalf("agent bucket: %v", err)
	}
	if _, err := kv.Create(ctx, "probe", []byte("x")); err != nil {
		t.Fatalf("create in the agent bucket: %v", err)
	}
	if e, err := kv.Get(ctx, "probe"); err != nil || string(e.Value()) != "x" {
		t.Fatalf("get from the agent bucket: %v", err)
	}
}

// syncBuffer is a goroutine-safe bytes.Buffer for logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startGateway runs one lcm-agentgw (run) with the gateway's restricted
// NATS account and waits until its listener answers. It returns the agent
// URL and the certificate fingerprint; the gateway stops with the test.
func startGateway(t *testing.T, natsURL, caFile string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM, err := tlscert.Generate("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, []byte(certPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(keyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(dir, "nats-pass")
	if err := os.WriteFile(pwFile, []byte(gwPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", addr, "-tls-cert", certFile, "-tls-key", keyFile, "-nats-url", natsURL,
			"-nats-user", gwUser, "-nats-password-file", pwFile, "-nats-ca", caFile}, logs, logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway %s: %v", addr, err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("gateway %s did not stop", addr)
		}
		if t.Failed() {
			t.Logf("gateway %s log:\n%s", addr, logs.String())
		}
	})
	// Ready once the log says so (the listener is bound before NATS).
	for !strings.Contains(logs.String(), "lcm-agentgw started") {
		select {
		case err := <-done:
			t.Fatalf("gateway ended early: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	pair, _ := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	return "wss://" + addr + "/mqtt", agentproto.FingerprintSHA256(pair.Certificate[0])
}

// TestSeveralGateways: two gateways serve one control plane; a command
// from the control plane reaches each agent through whichever gateway it
// is connected to, also after it moved from one to the other.
func TestSeveralGateways(t *testing.T) {
	api, natsURL, caFile := leastPrivilegeNATS(t)
	creds, err := api.AgentCredentials(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	url1, fp1 := startGateway(t, natsURL, caFile)
	url2, fp2 := startGateway(t, natsURL, caFile)
	respond := func(name string) agentsim.Responder {
		return func(_ context.Context, c *agentproto.Command, stdout, _ io.Writer) int {
			_, _ = io.WriteString(stdout, name+": "+c.Cmd)
			return 0
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o1 := &agentsim.Options{URL: url1, Fingerprint: fp1, Respond: respond("a")}
	o2 := &agentsim.Options{URL: url2, Fingerprint: fp2, Respond: respond("b")}
	enroll := func(o *agentsim.Options) agentsim.Agent {
		token, _, err := agentgw.Enroll(ctx, creds, "server-"+o.URL, o.URL, o.Fingerprint)
		if err != nil {
			t.Fatal(err)
		}
		a, err := agentsim.Enroll(ctx, o, token)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, b := enroll(o1), enroll(o2)
	ca, err := agentsim.Dial(ctx, o1, a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := agentsim.Dial(ctx, o2, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	runOn := func(agent, want string) {
		t.Helper()
		var out bytes.Buffer
		res, err := agentgw.NewExecutor(api, agent).Run(ctx, remote.Command{Cmd: "hostname", Stdout: &out})
		if err != nil || res.ExitCode != 0 || out.String() != want {
			t.Fatalf("agent %s: %v %+v %q, want %q", agent, err, res, out.String(), want)
		}
	}
	runOn(a.ID, "a: hostname")
	runOn(b.ID, "b: hostname")
	// Agent a moves to the second gateway (its first one went away, say):
	// the control plane still reaches it, without knowing where it is.
	ca.Close()
	o1moved := &agentsim.Options{URL: url2, Fingerprint: fp2, Respond: respond("a on 2")}
	ca2, err := agentsim.Dial(ctx, o1moved, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca2.Close()
	runOn(a.ID, "a on 2: hostname")
	runOn(b.ID, "b: hostname")
}
