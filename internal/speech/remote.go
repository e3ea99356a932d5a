package speech

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/lcmproject/lcm/internal/domain"
)

// maxErrorBody bounds how much of a provider's error body is read.
const maxErrorBody = 64 << 10

// maxMessage bounds a provider message passed on to clients.
const maxMessage = 300

// sanitize makes a provider or tool message safe for clients: the key (if
// any) is redacted, control characters dropped, whitespace collapsed and the
// length bounded.
func sanitize(msg, key string) string {
	if key != "" {
		msg = strings.ReplaceAll(msg, key, "[REDACTED]")
		msg = strings.ReplaceAll(msg, url.QueryEscape(key), "[REDACTED]")
	}
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, msg)
	msg = strings.Join(strings.Fields(msg), " ")
	if r := []rune(msg); len(r) > maxMessage {
		msg = string(r[:maxMessage]) + "…"
	}
	return msg
}

// transportError maps a failed round trip to provider_unavailable. The
// *url.Error text embeds the request URL, which carries Google's key, so
// only the host and the cause category are reported.
func transportError(ctx context.Context, provider, host string, err error) error {
	why := "cannot connect"
	var ne net.Error
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		why = "request cancelled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		why = "timed out"
	case errors.As(err, &dnsErr):
		why = "host not found"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		why = "connection refused"
	case errors.As(err, &opErr):
		why = "connection failed"
	}
	return &domain.Error{Kind: domain.ErrUnavailable, Code: CodeProviderUnavailable,
		Message: provider + " speech provider unavailable: " + why + " (" + host + ")"}
}

// statusError builds a provider_error for an HTTP error answer. The kind
// follows the status: the client's audio was refused (400, 413, 422) →
// ErrInvalid; quota (429) → ErrRateLimited; everything else (bad key 401/403,
// wrong URL 404, provider failure 5xx) → ErrUnavailable.
func statusError(provider string, status int, upstreamStatus, msg, key string) error {
	kind := domain.ErrUnavailable
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		kind = domain.ErrInvalid
	case http.StatusTooManyRequests:
		kind = domain.ErrRateLimited
	}
	msg = sanitize(msg, key)
	if msg == "" {
		msg = http.StatusText(status)
	}
	details := map[string]any{"provider": provider, "status": status}
	if upstreamStatus != "" {
		details["upstream_status"] = sanitize(upstreamStatus, key)
	}
	return &domain.Error{Kind: kind, Code: CodeProviderError,
		Message: provider + " speech provider error (HTTP " + strconv.Itoa(status) + "): " + msg, Details: details}
}

// badResponse reports a 2xx answer that does not have the documented shape.
func badResponse(provider string) error {
	return &domain.Error{Kind: domain.ErrUnavailable, Code: CodeProviderError,
		Message: provider + " speech provider sent an unreadable answer"}
}

// readErrorBody reads at most maxErrorBody of an error answer.
func readErrorBody(resp *http.Response) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return b
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "configured URL"
	}
	return u.Host
}
