package agentgw

import (
	"context"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// panickyCreds panics on every lookup (a broken credential backend).
type panickyCreds struct{ CredentialStore }

func (panickyCreds) Get(context.Context, string) ([]byte, uint64, error) {
	panic("the credential backend broke")
}

// TestHookAndLoopPanicsAreCounted: a panic in an MQTT hook (here the
// authentication of a CONNECT, which mochi runs in the connection's
// goroutine) rejects the connection and is counted for the health monitor;
// a panic in the revalidation loop is counted too, the loop starts again,
// and connected agents stay connected.
func TestHookAndLoopPanicsAreCounted(t *testing.T) {
	e := newEnv(t, 100*time.Millisecond)
	id, secret := e.enrolled(t)
	panics := testutil.CountPanics(t)

	boom := func(string) { panic("injected") }
	e.gw.hook.testHookAuth.Store(&boom)
	_, ca, err := e.dial(t, id, id, secret)
	e.gw.hook.testHookAuth.Store(nil)
	if err == nil || ca == nil || ca.ReasonCode != reasonBadCredentials {
		t.Fatalf("panicking hook admitted or answered oddly: %v %v", ca, err)
	}
	if got := panics(); got != 1 {
		t.Fatalf("%d panics counted after the hook's, want 1", got)
	}

	c, _, err := e.dial(t, id, id, secret)
	if err != nil {
		t.Fatalf("valid agent rejected: %v", err)
	}
	good := e.gw.hook.creds
	e.gw.hook.creds = panickyCreds{good}
	testutil.WaitFor(t, 10*time.Second, "two revalidation rounds panicked and were counted", func() bool { return panics() >= 3 })
	e.gw.hook.creds = good
	select {
	case <-c.gone:
		t.Fatal("a panicking revalidation dropped a connected agent")
	default:
	}
	if e.gw.ConnectedClients() != 1 {
		t.Fatalf("%d agents connected after the loop's panics, want 1", e.gw.ConnectedClients())
	}
}
