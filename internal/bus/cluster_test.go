package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"

	"github.com/lcmproject/lcm/internal/testutil"
)

// replicated lists every stream lcm-api creates (KV buckets and object
// stores are streams too).
func replicated() []string {
	names := []string{}
	for _, s := range streamConfigs(1) {
		names = append(names, s.Name)
	}
	for _, k := range bucketConfigs(1) {
		names = append(names, "KV_"+k.Bucket)
	}
	for _, o := range objectStoreConfigs(1) {
		names = append(names, "OBJ_"+o.Bucket)
	}
	return names
}

// TestReplicasOnAThreeNodeCluster runs three real nats-server processes
// with the accounts `lcm-api nats-auth` writes: lcm-api's bus creates every
// stream, bucket and object store with one replica, a second start with
// nats.replicas 3 raises each to three copies in place, and with one node
// stopped jobs still flow from the API to a worker (under its
// least-privilege account) and the lock bucket still takes writes.
func TestReplicasOnAThreeNodeCluster(t *testing.T) {
	users := []User{FullUser("api", "api-pw"), WorkerUser("worker-dc1", "worker-pw", []string{"dc1"}),
		AgentGatewayUser("agentgw", "gw-pw"), ScannerUser("scanner", "scanner-pw")}
	auth, err := AuthorizationConf(users, func(pw string) (string, error) {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		return string(h), err
	})
	if err != nil {
		t.Fatal(err)
	}
	cluster := testutil.StartNATSCluster(t, 3, auth)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	open := func(replicas int) *Bus {
		t.Helper()
		var b *Bus
		// The cluster elects its JetStream meta leader after the nodes
		// answer /healthz: retry until stream creation goes through.
		testutil.WaitFor(t, 60*time.Second, fmt.Sprintf("bus.Open with %d replicas", replicas), func() bool {
			octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
			defer ocancel()
			var err error
			b, err = Open(octx, Options{URL: cluster.URLs(), User: "api", Password: "api-pw", Replicas: replicas})
			if err != nil {
				t.Logf("bus.Open: %v", err)
				time.Sleep(500 * time.Millisecond)
			}
			return err == nil
		})
		return b
	}
	// check waits for every stream to settle at want copies: raising the
	// count moves a stream through a state with extra peers.
	check := func(b *Bus, want int) {
		t.Helper()
		for _, name := range replicated() {
			var last string
			settled := func() bool {
				s, err := b.JS.Stream(ctx, name)
				if err != nil {
					last = err.Error()
					return false
				}
				info, err := s.Info(ctx)
				if err != nil {
					last = err.Error()
					return false
				}
				current := 0
				if info.Cluster != nil {
					for _, p := range info.Cluster.Replicas {
						if p.Current {
							current++
						}
					}
				}
				last = fmt.Sprintf("%d configured, %d current peers beside the leader %+v", info.Config.Replicas, current, info.Cluster)
				return info.Config.Replicas == want && info.Cluster != nil && len(info.Cluster.Replicas) == want-1 && current == want-1
			}
			deadline := time.Now().Add(30 * time.Second)
			for !settled() {
				if time.Now().After(deadline) {
					t.Fatalf("stream %s never settled at %d replicas: %s", name, want, last)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	b1 := open(0)
	check(b1, 1)
	b1.Close()
	api := open(3)
	defer api.Close()
	check(api, 3)

	worker, err := Connect(ctx, ClientOptions{URL: cluster.URLs(), User: "worker-dc1", Password: "worker-pw", Name: "lcm-worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	consumer, err := worker.JobConsumer(ctx, "dc1", 30*time.Second, 16)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func(id string) {
		t.Helper()
		if err := api.Publish(ctx, JobSubject("dc1", "srv-1"), id, []byte(id)); err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
		msgs, err := consumer.Fetch(ctx, 1, 10*time.Second)
		if err != nil || len(msgs) != 1 || string(msgs[0].Data()) != id {
			t.Fatalf("worker fetch of %s: %d messages, %v", id, len(msgs), err)
		}
		if err := msgs[0].DoubleAck(ctx); err != nil {
			t.Fatalf("ack %s: %v", id, err)
		}
	}
	roundTrip("job-before")

	// Stop the node that leads the job stream: the other two elect a new
	// leader and keep every replicated stream writable.
	s, _ := api.JS.Stream(ctx, StreamJobs)
	info, _ := s.Info(ctx)
	stopped := ""
	for _, n := range cluster.Nodes {
		if info.Cluster != nil && n.Name == info.Cluster.Leader {
			n.Stop(t)
			stopped = n.Name
		}
	}
	if stopped == "" {
		t.Fatalf("no node leads %s (cluster info %+v)", StreamJobs, info.Cluster)
	}
	locks, err := api.Locks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 60*time.Second, "a lock written with "+stopped+" down", func() bool {
		_, err := locks.Create(ctx, "srv-1", []byte("job-after"))
		return err == nil || errors.Is(err, ErrLockHeld)
	})
	if v, _, err := locks.Get(ctx, "srv-1"); err != nil || string(v) != "job-after" {
		t.Fatalf("lock read back with %s down: %q %v", stopped, v, err)
	}
	testutil.WaitFor(t, 60*time.Second, "job stream writable with "+stopped+" down", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		defer pcancel()
		_, err := api.JS.Publish(pctx, JobSubject("dc1", "srv-2"), []byte("job-after"), jetstream.WithMsgID("job-after"))
		return err == nil
	})
	msgs, err := consumer.Fetch(ctx, 1, 20*time.Second)
	if err != nil || len(msgs) != 1 || !strings.Contains(string(msgs[0].Data()), "job-after") {
		t.Fatalf("worker fetch with %s down: %d messages, %v", stopped, len(msgs), err)
	}
	_ = msgs[0].Ack()
}

// TestTwoReplicasStartTogether: two lcm-api replicas that start at the same
// moment both create every stream on a cold cluster (nats-server answers
// neither of two identical racing creates) and again on a warm one; each
// Open succeeds and every stream ends with three replicas.
func TestTwoReplicasStartTogether(t *testing.T) {
	cluster := testutil.StartNATSCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The cluster answers JetStream requests once its meta leader is in.
	testutil.WaitFor(t, 60*time.Second, "JetStream meta leader", func() bool {
		b, err := Connect(ctx, ClientOptions{URL: cluster.URLs()})
		if err != nil {
			return false
		}
		defer b.Close()
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		defer acancel()
		_, err = b.JS.AccountInfo(actx)
		return err == nil
	})
	for _, round := range []string{"cold", "warm"} {
		start := time.Now()
		errs := make(chan error, 2)
		for i := 0; i < 2; i++ {
			go func() {
				b, err := Open(ctx, Options{URL: cluster.URLs(), Replicas: 3})
				if err == nil {
					b.Close()
				}
				errs <- err
			}()
		}
		for i := 0; i < 2; i++ {
			if err := <-errs; err != nil {
				t.Fatalf("%s start: %v", round, err)
			}
		}
		t.Logf("%s: both replicas opened the bus in %s", round, time.Since(start).Round(time.Millisecond))
	}
	b, err := Connect(ctx, ClientOptions{URL: cluster.URLs()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, name := range replicated() {
		if !b.hasReplicas(ctx, name, 3) {
			t.Errorf("stream %s does not have 3 replicas", name)
		}
	}
}

// TestClientWaitsForItsAccount: a worker started before the servers know
// its account (added to the NATS configuration and reloaded afterwards, as
// deploy/compose's setup.sh and SIGHUP do) keeps retrying and connects
// once the account exists, instead of giving up after two refusals.
func TestClientWaitsForItsAccount(t *testing.T) {
	hash := func(pw string) (string, error) {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		return string(h), err
	}
	api := FullUser("api", "api-pw")
	before, err := AuthorizationConf([]User{api}, hash)
	if err != nil {
		t.Fatal(err)
	}
	cluster := testutil.StartNATSCluster(t, 3, before)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := Connect(ctx, ClientOptions{URL: cluster.URLs(), User: "worker-dc3", Password: "w-pw", Name: "lcm-worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Refused a few times (the client retries every 500 ms).
	time.Sleep(2 * time.Second)
	if w.Healthy() {
		t.Fatal("connected with an account the servers do not know")
	}
	after, err := AuthorizationConf([]User{api, WorkerUser("worker-dc3", "w-pw", []string{"dc3"})}, hash)
	if err != nil {
		t.Fatal(err)
	}
	cluster.SetAuth(t, after)
	testutil.WaitFor(t, 30*time.Second, "the worker connected after the reload", w.Healthy)
}
