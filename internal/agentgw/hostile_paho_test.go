package agentgw

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/testutil"
)

// debianPython is Debian's python3, which python3-paho-mqtt installs for
// (a python3 earlier on PATH, e.g. pyenv's, may not have it).
const debianPython = "/usr/bin/python3"

// TestHostileClientsPaho is the hostile-client battery with the client the
// issue names: Debian's python3-paho-mqtt over a TLS WebSocket
// (testdata/hostile_paho.py), plus raw Python sockets for what no client
// library sends. It runs next to TestHostileClients (a Go client that can
// also send malformed packets) against a real gateway while a real
// enrolled lcm-agent stays connected: no or wrong credentials, another
// agent's id, MQTT 3.1.1, other agents' topics, wildcard and shared
// subscriptions, publishes to foreign topics, a retained message, a 2 MiB
// payload, QoS 2 and QoS 1 floods, a trickled CONNECT, silent WebSocket
// and TCP connections, and 1,300 half-open connections at once. Each is
// refused or cut off, nothing an attacker publishes reaches NATS, the real
// agent runs a command after every phase (and while the half-open
// connections are held), nothing panics, and the gateway's goroutines and
// heap come back down.
func TestHostileClientsPaho(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import paho.mqtt.client").Run(); err != nil {
		testutil.Unavailable(t, "Debian's python3-paho-mqtt (%s -c 'import paho.mqtt.client': %v)", debianPython, err)
	}
	e := newEnvWith(t, Options{MaxPending: 200, ConnectTimeout: 2 * time.Second})
	a := startAgent(t, e)
	ex := NewExecutor(e.bus, a)
	defer ex.Close()
	alive := func(t *testing.T, when string) {
		t.Helper()
		var out bytes.Buffer
		res, err := ex.Run(context.Background(), remote.Command{Cmd: "echo alive", Stdout: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "alive\n" {
			t.Fatalf("%s: the real agent no longer runs commands: %v %+v %q", when, err, res, out.String())
		}
	}
	alive(t, "before")
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	baseG := runtime.NumGoroutine()

	// Whatever the attacker publishes carries a marker: none may reach
	// NATS.
	var leaked atomic.Int64
	sub, err := e.bus.NC.Subscribe("lcm.agent.>", func(m *nats.Msg) {
		if bytes.Contains(m.Data, []byte("paho-foreign")) || bytes.Contains(m.Data, []byte("paho-retained")) {
			leaked.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	b, bSecret := e.enrolled(t) // a hostile but enrolled agent
	host, port, _ := net.SplitHostPort(e.srv.Listener.Addr().String())
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(debianPython, root+"/internal/agentgw/testdata/hostile_paho.py", host, port, a, b, bSecret)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("hostile_paho.py stderr:\n%s", stderr.String())
		}
	}()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func(want string, v any) {
		t.Helper()
		for lines.Scan() {
			name, js, ok := strings.Cut(strings.TrimPrefix(lines.Text(), "RESULT "), " {")
			if !strings.HasPrefix(lines.Text(), "RESULT ") || !ok {
				t.Logf("hostile_paho.py: %s", lines.Text())
				continue
			}
			if name != want {
				t.Fatalf("phase %q, want %q", name, want)
			}
			if err := json.Unmarshal([]byte("{"+js), v); err != nil {
				t.Fatalf("%s: %v: %s", want, err, js)
			}
			t.Logf("%s: {%s", want, js)
			return
		}
		t.Fatalf("hostile_paho.py ended before %q: %v\n%s", want, lines.Err(), stderr.String())
	}
	goOn := func() {
		if _, err := io.WriteString(stdin, "next\n"); err != nil {
			t.Fatal(err)
		}
	}

	var creds map[string]struct {
		Connack any  `json:"connack"`
		Closed  bool `json:"closed"`
	}
	next("credentials", &creds)
	if len(creds) != 7 {
		t.Fatalf("credential cases: %v", creds)
	}
	for name, c := range creds {
		if c.Connack == float64(0) || !c.Closed {
			t.Errorf("credentials %q: CONNACK %v, closed %v; want a refusal and a closed connection", name, c.Connack, c.Closed)
		}
	}
	alive(t, "after the credential attacks") // no takeover of the real agent's session
	goOn()

	var topics struct {
		Suback      map[string][]int `json:"suback"`
		PublishedTo []string         `json:"published_to"`
	}
	next("topics", &topics)
	if len(topics.Suback) != 8 {
		t.Fatalf("subscriptions tried: %v", topics.Suback)
	}
	for topic, rc := range topics.Suback {
		if len(rc) != 1 || rc[0] < 0x80 {
			t.Errorf("subscription to %s: SUBACK %v, want a refusal", topic, rc)
		}
	}
	alive(t, "after the topic attacks")
	goOn()

	var ret struct {
		Closed bool `json:"closed"`
		Reason any  `json:"disconnect_reason"`
	}
	next("retained", &ret)
	if !ret.Closed || ret.Reason != float64(0x9a) {
		t.Errorf("retained publish: closed %v with reason %v, want DISCONNECT 0x9a (retain not supported)", ret.Closed, ret.Reason)
	}
	if n := e.gw.srv.Info.Retained; n != 0 {
		t.Errorf("%d retained messages kept", n)
	}
	alive(t, "after the retained publish")
	goOn()

	var over struct {
		Closed bool `json:"closed"`
	}
	next("oversized", &over)
	if !over.Closed {
		t.Error("a 2 MiB publish did not end the connection")
	}
	alive(t, "after the oversized publish")
	goOn()

	var nothing map[string]any
	next("floods", &nothing)
	alive(t, "after the floods")
	goOn()

	var loris map[string]struct {
		Upgrade string `json:"upgrade"`
		Closed  bool   `json:"closed"`
	}
	next("slow loris", &loris)
	for name, l := range loris {
		if !l.Closed {
			t.Errorf("%s: the gateway kept the connection open", name)
		}
	}
	alive(t, "after the slow connections")
	goOn()

	var held struct {
		Upgraded int `json:"upgraded"`
		Refused  int `json:"refused_503"`
		Failed   int `json:"failed"`
		TCP      int `json:"tcp"`
	}
	next("half-open holding", &held)
	// Opened one after another, the upgrades rarely exceed MaxPending at
	// once (the gateway closes each after ConnectTimeout); the exact 503
	// bound is TestPendingConnectionsAreBounded's.
	if held.Upgraded+held.Refused+held.Failed != 300 || held.TCP != 1000 {
		t.Errorf("half-open: %+v", held)
	}
	var peak runtime.MemStats
	runtime.ReadMemStats(&peak)
	alive(t, "while 1,300 half-open connections are held")
	goOn()

	var closed struct {
		Closed int `json:"closed"`
		Total  int `json:"total"`
	}
	next("half-open closed", &closed)
	if closed.Closed != closed.Total {
		t.Errorf("the gateway closed %d of %d half-open connections", closed.Closed, closed.Total)
	}
	goOn()

	if n := leaked.Load(); n != 0 {
		t.Errorf("%d attacker messages reached NATS", n)
	}
	deadline := time.Now().Add(60 * time.Second)
	var after runtime.MemStats
	for {
		runtime.GC()
		runtime.ReadMemStats(&after)
		g := runtime.NumGoroutine()
		if g <= baseG+100 && after.HeapInuse < base.HeapInuse+64<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not back down: %d goroutines (base %d), heap in use %d MiB (base %d MiB)", g, baseG, after.HeapInuse>>20, base.HeapInuse>>20)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition, not a timing assumption
	}
	t.Logf("heap in use: base %d MiB, with the half-open connections %d MiB, after %d MiB", base.HeapInuse>>20, peak.HeapInuse>>20, after.HeapInuse>>20)
	alive(t, "at the end")
}
