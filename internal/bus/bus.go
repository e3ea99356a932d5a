package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options selects the bus.
type Options struct {
	// URL of an external NATS; empty starts the embedded server.
	URL      string
	User     string
	Password string
	// DataDir is where the embedded server keeps its JetStream store.
	DataDir string
	// Listen, when set, makes the embedded server accept remote clients
	// (workers near server segments) on this address, with TLS.
	Listen string
	TLS    *tls.Config
	// Users for remote clients of a listening embedded server.
	Users []User
	// Replicas of every stream, KV bucket and object store Open creates
	// (0 means 1). A three-node cluster needs 3 to survive a node; the
	// embedded server is one node and takes only 1.
	Replicas int
	Name     string
	Logger   *slog.Logger
}

// Bus is a connection to NATS JetStream (and the embedded server, if any).
type Bus struct {
	NC     *nats.Conn
	JS     jetstream.JetStream
	server EmbeddedServer
	log    *slog.Logger

	reconnectMu sync.Mutex
	onReconnect []func()

	// locks is the lock bucket's handle, looked up once: every job takes,
	// renews and releases its server's lock, and a lookup is a JetStream
	// API round trip. The handle names the bucket only, so it stays valid
	// across reconnects.
	locks atomic.Pointer[Locks]
}

// EmbeddedServer is what a Bus needs of an in-process NATS server
// (nats-server's *server.Server has these methods).
type EmbeddedServer interface {
	InProcessConn() (net.Conn, error)
	ClientURL() string
	Addr() net.Addr
	Shutdown()
	WaitForShutdown()
}

// embedded starts the in-process server. Package natsembed sets it: only
// the programs that import it (lcm-api) link nats-server; lcm-worker and
// lcm-agentgw, which always dial a URL, do not.
var embedded atomic.Pointer[func(o Options, name string) (EmbeddedServer, error)]

// RegisterEmbedded installs the function Open uses when no URL is given.
func RegisterEmbedded(start func(o Options, name string) (EmbeddedServer, error)) {
	embedded.Store(&start)
}

// Open starts the embedded server (when no URL is given), connects, and
// creates the streams and buckets idempotently.
func Open(ctx context.Context, o Options) (*Bus, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &Bus{log: log}
	name := o.Name
	if name == "" {
		name = "lcm"
	}
	var err error
	if o.URL == "" {
		start := embedded.Load()
		if start == nil {
			return nil, errors.New("bus: no NATS URL given and this program does not embed a NATS server")
		}
		if b.server, err = (*start)(o, name); err != nil {
			return nil, err
		}
		b.NC, err = nats.Connect("", nats.InProcessServer(b.server), nats.Name(name),
			nats.UserInfo(o.User, o.Password), nats.MaxReconnects(-1))
	} else {
		b.NC, err = nats.Connect(o.URL, nats.Name(name), nats.UserInfo(o.User, o.Password),
			nats.MaxReconnects(-1), nats.ReconnectWait(500*time.Millisecond),
			nats.Timeout(5*time.Second), nats.RetryOnFailedConnect(false),
			// A refusal while reconnecting (accounts being reloaded) is
			// retried, not the end of the connection.
			nats.IgnoreAuthErrorAbort())
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("bus: connect: %w", err)
	}
	if b.JS, err = jetstream.New(b.NC); err != nil {
		b.Close()
		return nil, err
	}
	// A cluster that has just started may not have placed its peers yet
	// ("no suitable peers for placement"): wait for it a while instead of
	// failing the start.
	deadline := time.Now().Add(ensureWait)
	for {
		err := b.ensure(ctx, o.Replicas)
		if err == nil {
			break
		}
		if !clusterSettling(err) || time.Now().After(deadline) {
			b.Close()
			return nil, err
		}
		log.Warn("bus: NATS cluster not ready for the streams yet, retrying", "err", err)
		select {
		case <-ctx.Done():
			b.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return b, nil
}

// ensureWait bounds how long Open waits for a NATS cluster that is still
// electing leaders or placing peers (all nodes started together).
const ensureWait = time.Minute

// clusterSettling reports the JetStream errors of a cluster that is not
// ready yet: no peers to place replicas on (10005), the cluster not
// available (10008), an API call that timed out.
func clusterSettling(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == 10005 || apiErr.ErrorCode == 10008
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// raceLost reports the answers of a create-or-update that raced another
// process's update of the same stream: nats-server answered the update
// "stream not found" while the other update was being applied, and the
// create that follows finds the stream after all ("subjects overlap with an
// existing stream", 10065, or "stream name already in use", 10058).
func raceLost(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == 10065 || apiErr.ErrorCode == 10058
	}
	return false
}

// ensure creates every stream, bucket and object store, or updates them
// to this config, with replicas copies each (raising the count of an
// existing stream is an update JetStream performs in place).
func (b *Bus) ensure(ctx context.Context, replicas int) error {
	if replicas < 1 {
		replicas = 1
	}
	// op creates or updates one stream (name: the stream behind a bucket
	// or object store). nats-server answers neither of two identical
	// creates that race from two replicas starting together, though it
	// makes the stream: an unanswered request is followed by a look-up,
	// and a random pause puts the replicas out of step for the next one.
	op := func(what, name string, f func(ctx context.Context) error) error {
		deadline := time.Now().Add(ensureTimeout)
		for {
			octx, cancel := context.WithTimeout(ctx, ensureAnswerTimeout)
			err := f(octx)
			cancel()
			if err == nil {
				return nil
			}
			if raceLost(err) && time.Now().Before(deadline) {
				// The other replica's update was in flight: this one's
				// update found no stream and its create then found it.
				// Tried again, the update goes through.
				b.log.Debug("bus: another process changed it at the same time; trying again", "stream", name, "err", err)
				if err := sleepCtx(ctx, 200*time.Millisecond+time.Duration(rand.Int64N(int64(500*time.Millisecond)))); err != nil {
					return err
				}
				continue
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
				return fmt.Errorf("bus: %s (%d replicas): %w", what, replicas, err)
			}
			for poll := time.Now().Add(ensureAnswerTimeout); time.Now().Before(poll); {
				if b.hasReplicas(ctx, name, replicas) {
					b.log.Debug("bus: made without an answer (another process made it at the same time)", "stream", name)
					return sleepCtx(ctx, time.Duration(rand.Int64N(int64(time.Second))))
				}
				if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
					return err
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bus: %s (%d replicas): %w", what, replicas, err)
			}
		}
	}
	for _, sc := range streamConfigs(replicas) {
		if err := op("stream "+sc.Name, sc.Name, func(ctx context.Context) error {
			_, err := b.JS.CreateOrUpdateStream(ctx, sc)
			return err
		}); err != nil {
			return err
		}
	}
	for _, kc := range bucketConfigs(replicas) {
		if err := op("bucket "+kc.Bucket, "KV_"+kc.Bucket, func(ctx context.Context) error {
			_, err := b.JS.CreateOrUpdateKeyValue(ctx, kc)
			return err
		}); err != nil {
			return err
		}
	}
	for _, oc := range objectStoreConfigs(replicas) {
		if err := op("object store "+oc.Bucket, "OBJ_"+oc.Bucket, func(ctx context.Context) error {
			_, err := b.JS.CreateOrUpdateObjectStore(ctx, oc)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// ensureAnswerTimeout is how long a stream, bucket or object store
// creation waits for its answer before the stream is looked up instead,
// and ensureTimeout how long one is tried in all. Why 2 s: a replicated
// stream waits for its raft group to elect a leader, well under a second
// on a three-node cluster; an answer that never comes (two replicas racing,
// see ensure) then costs 2 s, not the client's default 5 s. 30 s in all
// covers a loaded machine.
const (
	ensureAnswerTimeout = 2 * time.Second
	ensureTimeout       = 30 * time.Second
)

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// hasReplicas reports whether the stream exists with replicas copies.
func (b *Bus) hasReplicas(ctx context.Context, name string, replicas int) bool {
	ctx, cancel := context.WithTimeout(ctx, ensureAnswerTimeout)
	defer cancel()
	s, err := b.JS.Stream(ctx, name)
	if err != nil {
		return false
	}
	info, err := s.Info(ctx)
	return err == nil && info.Config.Replicas == replicas
}

// streamConfigs are the streams lcm-api owns.
func streamConfigs(replicas int) []jetstream.StreamConfig {
	return []jetstream.StreamConfig{
		{
			Name: StreamJobs, Subjects: []string{SubjectJobsAll},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: replicas,
			// Dedup window: a retried publish of the same job id is dropped.
			Duplicates: 10 * time.Minute, MaxAge: 24 * time.Hour,
		},
		{
			Name: StreamJobEvents, Subjects: []string{SubjectJobEventsAll},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: replicas,
			// Events only need to survive until the API has ingested them.
			MaxAge: 24 * time.Hour, MaxBytes: 4 << 30, Duplicates: 2 * time.Minute,
		},
	}
}

// bucketConfigs are the KV buckets lcm-api owns.
func bucketConfigs(replicas int) []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{Bucket: BucketLocks, TTL: 2 * time.Minute, History: 1, Replicas: replicas},
		{Bucket: BucketLeader, TTL: 30 * time.Second, History: 1, Replicas: replicas},
		{Bucket: BucketRateLimit, TTL: 2 * time.Minute, History: 1, Replicas: replicas},
		{Bucket: BucketLockout, TTL: 24 * time.Hour, History: 1, Replicas: replicas},
		{Bucket: BucketAuth, TTL: 2 * time.Minute, History: 1, Replicas: replicas},
		{Bucket: BucketAgents, History: 1, Replicas: replicas},
	}
}

// objectStoreConfigs are the object stores lcm-api owns.
func objectStoreConfigs(replicas int) []jetstream.ObjectStoreConfig {
	return []jetstream.ObjectStoreConfig{
		{Bucket: BucketVulnDB, Description: "uploaded OSV exports (<ecosystem>/all.zip)", Storage: jetstream.FileStorage, Replicas: replicas},
	}
}

// KV returns a bucket by name.
func (b *Bus) KV(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	return b.JS.KeyValue(ctx, bucket)
}

// Healthy reports whether the connection is up.
func (b *Bus) Healthy() bool { return b.NC != nil && b.NC.IsConnected() }

// Embedded reports whether this process runs the NATS server.
func (b *Bus) Embedded() bool { return b.server != nil }

// ClientURL is the embedded server's listen URL ("" when in-process only).
func (b *Bus) ClientURL() string {
	if b.server == nil || b.server.Addr() == nil {
		return ""
	}
	return b.server.ClientURL()
}

// Close drains the connection (in-flight messages are delivered) and stops
// the embedded server.
func (b *Bus) Close() error {
	if b.NC != nil {
		done := make(chan struct{})
		b.NC.SetClosedHandler(func(*nats.Conn) { close(done) })
		if err := b.NC.Drain(); err == nil {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
		}
		b.NC.Close()
	}
	if b.server != nil {
		b.server.Shutdown()
		b.server.WaitForShutdown()
	}
	return nil
}
