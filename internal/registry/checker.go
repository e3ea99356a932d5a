package registry

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/safe"
)

// userAgent names LCM to registry operators reading their logs.
const userAgent = "lcm-registry-check/1"

// Defaults of Options.
const (
	// DefaultConcurrency bounds the requests in flight across all Check
	// calls of one Checker: enough to check 500 images in seconds, few
	// enough that no registry sees a burst.
	DefaultConcurrency = 16
	// DefaultCacheTTL keeps a digest this long: a check every few minutes
	// (every server refresh) asks a registry at most once per image.
	DefaultCacheTTL = 10 * time.Minute
	// DefaultTimeout bounds one reference's check (token fetch, HEAD and
	// a possible GET) so one dead registry cannot stall the batch.
	DefaultTimeout = 15 * time.Second
	// DefaultRetryAfter is the pause after a 429 that names no
	// Retry-After: long enough for a per-minute window to pass.
	DefaultRetryAfter = 60 * time.Second
)

// EndpointSource returns what is stored for a registry host (credentials,
// plain HTTP). ok false: nothing stored, anonymous HTTPS. It is called once
// per host per Check.
type EndpointSource func(ctx context.Context, host string) (ep Endpoint, ok bool, err error)

// Options configure a Checker. Zero values take the defaults above.
type Options struct {
	Concurrency int
	CacheTTL    time.Duration
	Timeout     time.Duration
	Endpoints   EndpointSource
	// HTTPClient sends the requests (default: a client with sane
	// transport timeouts).
	HTTPClient *http.Client
	// Now is the clock (tests).
	Now func() time.Time
}

// ImageRef is one image to check: its reference as the engine shows it
// ("nginx:1.25", "ghcr.io/x/y:tag") and the repo digests the engine holds
// for it ("nginx@sha256:…" or bare "sha256:…"; any one matching the
// registry's digest means the image is current).
type ImageRef struct {
	Ref          string
	LocalDigests []string
}

// State is the outcome of one check.
type State string

// States of a Result.
const (
	StateUpToDate        State = "up_to_date"
	StateUpdateAvailable State = "update_available"
	StateUnknown         State = "unknown"
)

// Result is the outcome for one ImageRef, in the order given.
type Result struct {
	// Ref is the reference as given; Name the normalised one
	// ("registry-1.docker.io/library/nginx:1.25").
	Ref  string `json:"ref"`
	Name string `json:"name"`
	// State is up_to_date, update_available or unknown.
	State State `json:"state"`
	// Reason and Detail explain an unknown state.
	Reason Reason `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// RemoteDigest is the registry's digest for the tag (when known).
	RemoteDigest string `json:"remote_digest,omitempty"`
	// CheckedAt is when the registry was asked (the cache entry's time
	// for a cached answer); Cached tells the two apart.
	CheckedAt time.Time `json:"checked_at"`
	Cached    bool      `json:"cached"`
}

type cacheEntry struct {
	digest string
	at     time.Time
}

// Checker checks images against their registries. It is safe for
// concurrent use; its caches live as long as it does.
//
// Lock order: mu only; it is never held while a request is in flight.
type Checker struct {
	opt  Options
	http *http.Client
	now  func() time.Time
	sem  chan struct{}

	mu         sync.Mutex
	digests    map[string]cacheEntry // "host/repo:tag" → digest
	tokens     map[tokenKey]cachedToken
	fetching   map[tokenKey]chan struct{} // token fetches in flight
	basicHosts map[string]bool            // hosts that challenged for Basic
	blocked    map[string]time.Time       // host → no requests before
	remaining  map[string]int             // host → last RateLimit-Remaining
}

// New returns a Checker.
func New(o Options) *Checker {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	hc := o.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = o.Concurrency
		tr.ResponseHeaderTimeout = o.Timeout
		hc = &http.Client{Transport: tr}
	}
	return &Checker{opt: o, http: hc, now: o.Now, sem: make(chan struct{}, o.Concurrency),
		digests: map[string]cacheEntry{}, tokens: map[tokenKey]cachedToken{}, fetching: map[tokenKey]chan struct{}{}, basicHosts: map[string]bool{},
		blocked: map[string]time.Time{}, remaining: map[string]int{}}
}

// Check checks every reference and returns one Result per ImageRef, in
// order. Equal references are asked once. It never fails as a whole: what
// cannot be decided is StateUnknown with a reason. Cancelling ctx ends the
// outstanding checks as unknown/unreachable.
func (c *Checker) Check(ctx context.Context, refs []ImageRef) []Result {
	out := make([]Result, len(refs))
	type job struct {
		ref  Reference
		idxs []int
	}
	jobs := map[string]*job{}
	var order []string
	for i, ir := range refs {
		out[i] = Result{Ref: ir.Ref}
		ref, err := ParseReference(strings.TrimSpace(ir.Ref))
		if err != nil {
			out[i].State, out[i].Reason, out[i].Detail = StateUnknown, ReasonInvalidReference, err.Error()
			continue
		}
		out[i].Name = ref.String()
		if ref.Tag == "" {
			out[i].State, out[i].Reason, out[i].Detail = StateUnknown, ReasonPinned, "the image is referenced by digest only: no tag to follow"
			continue
		}
		key := ref.Name() + ":" + ref.Tag
		if j := jobs[key]; j != nil {
			j.idxs = append(j.idxs, i)
			continue
		}
		jobs[key] = &job{ref: ref, idxs: []int{i}}
		order = append(order, key)
	}
	// Endpoints once per host.
	eps := map[string]Endpoint{}
	epErr := map[string]error{}
	if c.opt.Endpoints != nil {
		for _, key := range order {
			h := jobs[key].ref.Host
			if _, done := eps[h]; done {
				continue
			}
			if _, done := epErr[h]; done {
				continue
			}
			ep, _, err := c.opt.Endpoints(ctx, h)
			if err != nil {
				epErr[h] = err
				continue
			}
			eps[h] = ep
		}
	}
	var wg sync.WaitGroup
	for _, key := range order {
		j := jobs[key]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r Result
			if err := epErr[j.ref.Host]; err != nil {
				r = Result{State: StateUnknown, Reason: ReasonUnreachable, Detail: "reading the stored registry settings: " + err.Error()}
			} else if safe.Do("registry check", func() { r = c.checkOne(ctx, key, j.ref, eps[j.ref.Host]) }) {
				r = Result{State: StateUnknown, Reason: ReasonUnreachable, Detail: "internal error while checking this reference (logged with its stack)"}
			}
			for _, i := range j.idxs {
				rr := r
				rr.Ref, rr.Name = out[i].Ref, out[i].Name
				if rr.RemoteDigest != "" {
					rr.State = compare(rr.RemoteDigest, refs[i].LocalDigests)
					if rr.State == StateUnknown {
						rr.Reason, rr.Detail = ReasonNoLocalDigest, "the engine holds no repo digest for this image"
					}
				}
				out[i] = rr
			}
		}()
	}
	wg.Wait()
	return out
}

// checkOne returns the remote digest of one reference (State set only
// when unknown).
func (c *Checker) checkOne(ctx context.Context, key string, ref Reference, ep Endpoint) Result {
	now := c.now()
	c.mu.Lock()
	e, hit := c.digests[key]
	c.mu.Unlock()
	if hit && now.Sub(e.at) < c.opt.CacheTTL {
		return Result{RemoteDigest: e.digest, CheckedAt: e.at, Cached: true}
	}
	unknown := func(err error) Result {
		ce := &CheckError{Reason: ReasonOf(err), Detail: err.Error()}
		if x, ok := err.(*CheckError); ok {
			ce = x
		}
		return Result{State: StateUnknown, Reason: ce.Reason, Detail: ce.Detail, CheckedAt: now}
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return unknown(fail(ReasonUnreachable, "cancelled: %v", ctx.Err()))
	}
	defer func() { <-c.sem }()
	if until, blocked := c.blockedUntil(ref.Host); blocked {
		return unknown(fail(ReasonRateLimited, "the registry asked for a pause until %s", until.UTC().Format(time.RFC3339)))
	}
	cctx, cancel := context.WithTimeout(ctx, c.opt.Timeout)
	defer cancel()
	d, err := c.resolve(cctx, ref, ep)
	if err != nil {
		if ce, ok := err.(*CheckError); ok && ce.Reason == ReasonRateLimited && ce.RetryAfter >= 0 {
			c.block(ref.Host, ce.RetryAfter)
		}
		return unknown(err)
	}
	at := c.now()
	c.mu.Lock()
	c.digests[key] = cacheEntry{digest: d, at: at}
	c.mu.Unlock()
	return Result{RemoteDigest: d, CheckedAt: at}
}

// compare decides between up_to_date and update_available; unknown when
// there is no local digest to compare with.
func compare(remote string, local []string) State {
	seen := false
	for _, l := range local {
		if i := strings.LastIndexByte(l, '@'); i >= 0 {
			l = l[i+1:]
		}
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		seen = true
		if l == remote {
			return StateUpToDate
		}
	}
	if !seen {
		return StateUnknown
	}
	return StateUpdateAvailable
}

func (c *Checker) block(host string, d time.Duration) {
	if d <= 0 {
		d = DefaultRetryAfter
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if until := c.now().Add(d); until.After(c.blocked[host]) {
		c.blocked[host] = until
	}
}

func (c *Checker) blockedUntil(host string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.blocked[host]
	return until, ok && c.now().Before(until)
}

// noteRateLimit records a response's RateLimit-Remaining.
func (c *Checker) noteRateLimit(host string, resp *http.Response) {
	v := resp.Header.Get("RateLimit-Remaining")
	if v == "" {
		return
	}
	if n, ok := parseRemaining(v); ok {
		c.mu.Lock()
		c.remaining[host] = n
		c.mu.Unlock()
	}
}

// limitSpent reports whether the host's last RateLimit-Remaining was 0.
func (c *Checker) limitSpent(host string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.remaining[host]
	return ok && n <= 0
}

// Forget drops the cached digests and tokens of a host (after its stored
// credentials changed); "" drops everything.
func (c *Checker) Forget(host string) {
	host = NormalizeHost(host)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.digests {
		if host == "" || strings.HasPrefix(k, host+"/") {
			delete(c.digests, k)
		}
	}
	for k := range c.tokens {
		if host == "" || k.host == host {
			delete(c.tokens, k)
		}
	}
	if host == "" {
		clear(c.basicHosts)
		clear(c.blocked)
		clear(c.remaining)
		return
	}
	delete(c.basicHosts, host)
	delete(c.blocked, host)
	delete(c.remaining, host)
}
