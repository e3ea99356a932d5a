package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// manifestAccept lists the manifest media types a check accepts, index
// types first: a multi-platform tag answers with its index, whose digest is
// what `docker pull` records as the repo digest.
var manifestAccept = strings.Join([]string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}, ", ")

// maxManifestBytes bounds a manifest read on the GET fallback (the spec
// lets registries refuse manifests over 4 MiB).
const maxManifestBytes = 4 << 20

// maxTokenBytes bounds a token endpoint's answer.
const maxTokenBytes = 1 << 20

// defaultTokenTTL is the lifetime the token spec prescribes when the
// token endpoint names none (60 s).
const defaultTokenTTL = 60 * time.Second

// tokenSlack renews a token this long before it expires, so a request
// never starts with a token about to lapse.
const tokenSlack = 5 * time.Second

// Endpoint is what the checker knows about one registry host beyond its
// name: credentials (empty for anonymous access) and whether it speaks
// plain HTTP (a registry on a private network without TLS).
type Endpoint struct {
	Username string
	Password string
	// PlainHTTP sends requests over http:// instead of https://.
	PlainHTTP bool
}

func (e Endpoint) hasCreds() bool { return e.Username != "" || e.Password != "" }

// Reason says why a check could not decide.
type Reason string

// Reasons of an unknown result.
const (
	ReasonUnauthorized Reason = "unauthorized"
	ReasonNotFound     Reason = "not_found"
	ReasonRateLimited  Reason = "rate_limited"
	ReasonUnreachable  Reason = "unreachable"
	// ReasonInvalidReference: the reference does not parse.
	ReasonInvalidReference Reason = "invalid_reference"
	// ReasonPinned: the image is referenced by digest alone, there is no
	// tag whose newer digest could be looked up.
	ReasonPinned Reason = "pinned"
	// ReasonNoLocalDigest: the engine holds no repo digest for the image
	// (built locally, or loaded from a file), so there is nothing to compare.
	ReasonNoLocalDigest Reason = "no_local_digest"
)

// CheckError is a failed registry request with the reason it maps to.
type CheckError struct {
	Reason Reason
	Detail string
	// RetryAfter is the wait a 429 asked for (0 when none was named).
	RetryAfter time.Duration
}

func (e *CheckError) Error() string { return string(e.Reason) + ": " + e.Detail }

func fail(r Reason, format string, args ...any) *CheckError {
	return &CheckError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the reason of an error from this package ("" for nil,
// unreachable for anything else).
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	var ce *CheckError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return ReasonUnreachable
}

func baseURL(host string, ep Endpoint) string {
	if ep.PlainHTTP {
		return "http://" + host
	}
	return "https://" + host
}

// tokenKey addresses a cached bearer token.
type tokenKey struct {
	host, scope string
	// cred identifies the credentials (a hash, never the password), so a
	// token obtained with one password is not reused for another.
	cred [sha256.Size]byte
}

func credID(ep Endpoint) [sha256.Size]byte {
	return sha256.Sum256([]byte(ep.Username + "\x00" + ep.Password))
}

type cachedToken struct {
	value   string
	expires time.Time
}

// do sends one request with the credentials the host wants, answering a
// 401 challenge once (bearer token or Basic) and retrying.
func (c *Checker) do(ctx context.Context, method, host, path, scope string, ep Endpoint, hdr http.Header) (*http.Response, error) {
	send := func(auth string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, baseURL(host, ep)+path, nil)
		if err != nil {
			return nil, fail(ReasonUnreachable, "%v", err)
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", userAgent)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fail(ReasonUnreachable, "%s", netErrText(err))
		}
		c.noteRateLimit(host, resp)
		return resp, nil
	}
	auth := c.knownAuth(host, scope, ep)
	resp, err := send(auth)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	challenges := ParseChallenges(resp.Header.Values("WWW-Authenticate"))
	drain(resp)
	if strings.HasPrefix(auth, "Bearer ") {
		// The registry no longer takes the cached token (revoked, or
		// our clock is ahead of its): fetch a new one.
		c.mu.Lock()
		delete(c.tokens, tokenKey{host, scope, credID(ep)})
		c.mu.Unlock()
	}
	auth, err = c.answer(ctx, host, scope, ep, challenges)
	if err != nil {
		return nil, err
	}
	return send(auth)
}

// knownAuth is the Authorization header to try first: a cached token for
// the scope, or Basic for a host known to want it.
func (c *Checker) knownAuth(host, scope string, ep Endpoint) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tokens[tokenKey{host, scope, credID(ep)}]; ok && c.now().Before(t.expires) {
		return "Bearer " + t.value
	}
	if c.basicHosts[host] && ep.hasCreds() {
		return basicAuth(ep)
	}
	return ""
}

func basicAuth(ep Endpoint) string {
	req := http.Request{Header: http.Header{}}
	req.SetBasicAuth(ep.Username, ep.Password)
	return req.Header.Get("Authorization")
}

// answer turns a 401's challenges into an Authorization header.
func (c *Checker) answer(ctx context.Context, host, scope string, ep Endpoint, challenges []Challenge) (string, error) {
	for _, ch := range challenges {
		if ch.Scheme == "bearer" && ch.Params["realm"] != "" {
			// The challenge names the scope the registry wants; a ping
			// asks for none (a token without scope proves the login).
			want := scope
			if ch.Params["scope"] != "" && scope != "" {
				want = ch.Params["scope"]
			}
			key := tokenKey{host, scope, credID(ep)}
			// One fetch per key at a time: the images of one repository
			// checked together share the token the first one gets.
			for {
				c.mu.Lock()
				if t, ok := c.tokens[key]; ok && c.now().Before(t.expires) {
					c.mu.Unlock()
					return "Bearer " + t.value, nil
				}
				wait, busy := c.fetching[key]
				if !busy {
					c.fetching[key] = make(chan struct{})
					c.mu.Unlock()
					break
				}
				c.mu.Unlock()
				select {
				case <-wait:
				case <-ctx.Done():
					return "", fail(ReasonUnreachable, "cancelled: %v", ctx.Err())
				}
			}
			tok, ttl, err := c.fetchToken(ctx, ch.Params["realm"], ch.Params["service"], want, ep)
			c.mu.Lock()
			if err == nil {
				c.tokens[key] = cachedToken{value: tok, expires: c.now().Add(ttl - tokenSlack)}
			}
			close(c.fetching[key])
			delete(c.fetching, key)
			c.mu.Unlock()
			if err != nil {
				return "", err
			}
			return "Bearer " + tok, nil
		}
	}
	for _, ch := range challenges {
		if ch.Scheme == "basic" {
			if !ep.hasCreds() {
				return "", fail(ReasonUnauthorized, "the registry wants a user name and password; none is stored for %s", host)
			}
			c.mu.Lock()
			c.basicHosts[host] = true
			c.mu.Unlock()
			return basicAuth(ep), nil
		}
	}
	return "", fail(ReasonUnauthorized, "the registry refused access without a challenge this client can answer")
}

// tokenAnswer is the token endpoint's JSON (token spec: "token" or the
// OAuth2 "access_token"; expires_in in seconds).
type tokenAnswer struct {
	Token       string `json:"token"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
}

// fetchToken asks the realm for a bearer token for scope, with Basic
// credentials when the endpoint has some (anonymous otherwise).
func (c *Checker) fetchToken(ctx context.Context, realm, service, scope string, ep Endpoint) (string, time.Duration, error) {
	u, err := url.Parse(realm)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", 0, fail(ReasonUnauthorized, "the registry named an unusable token realm %q", realm)
	}
	// A token realm over plain HTTP would carry the password in clear:
	// only allowed for a registry configured for plain HTTP.
	if u.Scheme == "http" && !ep.PlainHTTP {
		return "", 0, fail(ReasonUnauthorized, "the registry named a token realm over plain HTTP (%s)", u.Host)
	}
	q := u.Query()
	if service != "" {
		q.Set("service", service)
	}
	if scope != "" {
		q.Set("scope", scope)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", 0, fail(ReasonUnreachable, "%v", err)
	}
	req.Header.Set("User-Agent", userAgent)
	if ep.hasCreds() {
		req.SetBasicAuth(ep.Username, ep.Password)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", 0, fail(ReasonUnreachable, "token endpoint: %s", netErrText(err))
	}
	defer drain(resp)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", 0, fail(ReasonUnauthorized, "the token endpoint refused the credentials (%d)", resp.StatusCode)
	case resp.StatusCode == http.StatusTooManyRequests:
		return "", 0, &CheckError{Reason: ReasonRateLimited, Detail: "the token endpoint answered 429", RetryAfter: retryAfter(resp, c.now())}
	case resp.StatusCode != http.StatusOK:
		return "", 0, fail(ReasonUnreachable, "the token endpoint answered %d", resp.StatusCode)
	}
	var ta tokenAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenBytes)).Decode(&ta); err != nil {
		return "", 0, fail(ReasonUnreachable, "the token endpoint's answer is not JSON: %v", err)
	}
	tok := ta.Token
	if tok == "" {
		tok = ta.AccessToken
	}
	if tok == "" {
		return "", 0, fail(ReasonUnauthorized, "the token endpoint answered without a token")
	}
	ttl := defaultTokenTTL
	if ta.ExpiresIn > 0 {
		ttl = time.Duration(ta.ExpiresIn) * time.Second
	}
	if ttl <= tokenSlack {
		ttl = tokenSlack + time.Second
	}
	return tok, ttl, nil
}

// resolve returns the registry's current manifest digest for ref's tag.
func (c *Checker) resolve(ctx context.Context, ref Reference, ep Endpoint) (string, error) {
	scope := "repository:" + ref.Repository + ":pull"
	path := "/v2/" + ref.Repository + "/manifests/" + ref.Tag
	hdr := http.Header{"Accept": {manifestAccept}}
	resp, err := c.do(ctx, http.MethodHead, ref.Host, path, scope, ep, hdr)
	if err != nil {
		return "", err
	}
	drain(resp)
	if err := statusErr(resp, ref, c.now()); err != nil {
		return "", err
	}
	if d := resp.Header.Get("Docker-Content-Digest"); digestRe.MatchString(d) {
		return d, nil
	}
	// No digest header: read the manifest and hash it. On Docker Hub a
	// GET counts against the pull limit, so not when it is spent.
	if c.limitSpent(ref.Host) {
		return "", fail(ReasonRateLimited, "the registry sent no digest and its pull limit is spent (RateLimit-Remaining: 0)")
	}
	resp, err = c.do(ctx, http.MethodGet, ref.Host, path, scope, ep, hdr)
	if err != nil {
		return "", err
	}
	defer drain(resp)
	if err := statusErr(resp, ref, c.now()); err != nil {
		return "", err
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return "", fail(ReasonUnreachable, "reading the manifest: %v", err)
	}
	if n > maxManifestBytes {
		return "", fail(ReasonUnreachable, "the manifest is larger than %d bytes", maxManifestBytes)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func statusErr(resp *http.Response, ref Reference, now time.Time) error {
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
		return nil
	case code == http.StatusNotFound:
		return fail(ReasonNotFound, "%s has no tag %q", ref.Name(), ref.Tag)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fail(ReasonUnauthorized, "the registry refused access to %s (%d)", ref.Name(), code)
	case code == http.StatusTooManyRequests:
		return &CheckError{Reason: ReasonRateLimited, Detail: "the registry answered 429 Too Many Requests", RetryAfter: retryAfter(resp, now)}
	default:
		return fail(ReasonUnreachable, "the registry answered %d for %s", code, ref.Name())
	}
}

// Ping checks that a registry answers and accepts the endpoint's
// credentials: GET /v2/, answering its challenge (for a bearer realm, a
// token without a scope, which proves the credentials).
func (c *Checker) Ping(ctx context.Context, host string, ep Endpoint) error {
	host = NormalizeHost(host)
	if !ValidHost(host) {
		return fail(ReasonInvalidReference, "%q is not a registry host", host)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opt.Timeout)
	defer cancel()
	resp, err := c.do(ctx, http.MethodGet, host, "/v2/", "", ep, nil)
	if err != nil {
		return err
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusUnauthorized, http.StatusForbidden:
		return fail(ReasonUnauthorized, "the registry refused the credentials (%d)", resp.StatusCode)
	case http.StatusNotFound:
		return fail(ReasonNotFound, "no registry API at %s/v2/", host)
	case http.StatusTooManyRequests:
		return &CheckError{Reason: ReasonRateLimited, Detail: "the registry answered 429", RetryAfter: retryAfter(resp, c.now())}
	default:
		return fail(ReasonUnreachable, "the registry answered %d", resp.StatusCode)
	}
}

// retryAfter reads Retry-After (seconds or an HTTP date); 0 when absent.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		d = time.Duration(min(n, int(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
		d = t.Sub(now)
	}
	return min(d, maxRetryAfter)
}

// maxRetryAfter caps the pause a registry can ask for, so a garbled
// header cannot silence a registry for days.
const maxRetryAfter = 6 * time.Hour

// parseRemaining reads "76;w=21600" (Docker Hub's RateLimit-Remaining).
func parseRemaining(v string) (int, bool) {
	v, _, _ = strings.Cut(v, ";")
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil && n >= 0
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

func netErrText(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
