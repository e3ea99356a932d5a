package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
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
	Users  []User
	Name   string
	Logger *slog.Logger
	// Replicas is how many servers of an external NATS cluster keep each
	// stream and bucket (1 when zero; 3 in a 3-node cluster, so one node
	// may stop without losing a job). The embedded server is one node.
	Replicas int
}

// Bus is a connection to NATS JetStream (and the embedded server, if any).
type Bus struct {
	NC     *nats.Conn
	JS     jetstream.JetStream
	server EmbeddedServer
	log    *slog.Logger

	reconnectMu sync.Mutex
	onReconnect []func()
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
			nats.Timeout(5*time.Second), nats.RetryOnFailedConnect(false))
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
		err := b.ensure(ctx, max(o.Replicas, 1))
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

// ensure creates every stream and bucket with the given replica count, or
// updates them to this config.
func (b *Bus) ensure(ctx context.Context, replicas int) error {
	streams := []jetstream.StreamConfig{
		{
			Name: StreamJobs, Subjects: []string{SubjectJobsAll},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
			// Dedup window: a retried publish of the same job id is dropped.
			Duplicates: 10 * time.Minute, MaxAge: 24 * time.Hour,
		},
		{
			Name: StreamJobEvents, Subjects: []string{SubjectJobEventsAll},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			// Events only need to survive until the API has ingested them.
			MaxAge: 24 * time.Hour, MaxBytes: 4 << 30, Duplicates: 2 * time.Minute,
		},
	}
	for _, sc := range streams {
		sc.Replicas = replicas
		if _, err := b.JS.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("bus: stream %s: %w", sc.Name, err)
		}
	}
	buckets := []jetstream.KeyValueConfig{
		{Bucket: BucketLocks, TTL: 2 * time.Minute, History: 1},
		{Bucket: BucketLeader, TTL: 30 * time.Second, History: 1},
		{Bucket: BucketRateLimit, TTL: 2 * time.Minute, History: 1},
		{Bucket: BucketLockout, TTL: 24 * time.Hour, History: 1},
		{Bucket: BucketAuth, TTL: 2 * time.Minute, History: 1},
		{Bucket: BucketAgents, History: 1},
	}
	for _, kc := range buckets {
		kc.Replicas = replicas
		if _, err := b.JS.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("bus: bucket %s: %w", kc.Bucket, err)
		}
	}
	return nil
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
