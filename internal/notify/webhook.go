package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// webhookTimeout bounds one webhook request. Why 10 s: chat services
// answer in well under a second; a receiver slower than this is treated
// as failed and retried later, so it never holds a delivery slot long.
const webhookTimeout = 10 * time.Second

// maxAnswer is how much of the receiver's answer a delivery keeps.
const maxAnswer = 512

// Signature headers of the generic format. The signature is
// hex(HMAC-SHA256(signingSecret, timestamp + "." + body)), sent as
// "sha256=<hex>"; the timestamp is Unix seconds, so a receiver can refuse
// replays outside its window.
const (
	HeaderSignature = "X-LCM-Signature"
	HeaderTimestamp = "X-LCM-Timestamp"
	HeaderEvent     = "X-LCM-Event"
)

// GenericPayload is the documented JSON body of the generic format
// (docs/alerts.md). Version changes only with an incompatible change.
type GenericPayload struct {
	Version   int           `json:"version"`
	Type      string        `json:"type"` // alert.firing, alert.repeat, alert.resolved, alert.test
	EventID   string        `json:"event_id"`
	Title     string        `json:"title"`
	Message   string        `json:"message"`
	Severity  string        `json:"severity"`
	Rule      GenericRule   `json:"rule"`
	Server    *GenericServr `json:"server"`
	CreatedAt time.Time     `json:"created_at"`
}

// GenericRule names the rule of a generic payload.
type GenericRule struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// GenericServr names the server of a generic payload (null for
// fleet-wide rules).
type GenericServr struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Sign returns the value of HeaderSignature for body sent at ts.
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", ts)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature checks a signature made by Sign (constant time).
func VerifySignature(secret string, ts int64, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, ts, body)), []byte(sig))
}

// Body builds the request body of format for m, and the URL suffix the
// format needs (Gotify posts to /message).
func Body(format string, c Config, m Message) ([]byte, string, error) {
	text := m.Title() + "\n" + m.Text
	var v any
	suffix := ""
	switch format {
	case FormatGeneric, "":
		p := GenericPayload{Version: 1, Type: "alert." + m.Kind, EventID: m.EventID, Title: m.Title(), Message: m.Text,
			Severity: m.Severity, Rule: GenericRule{ID: m.RuleID, Name: m.RuleName, Type: m.RuleType}, CreatedAt: m.CreatedAt.UTC()}
		if m.ServerID != "" || m.Server != "" {
			p.Server = &GenericServr{ID: m.ServerID, Name: m.Server}
		}
		v = p
	case FormatSlack:
		v = map[string]any{"text": text}
	case FormatMattermost:
		v = map[string]any{"text": text, "username": "LCM"}
	case FormatDiscord:
		v = map[string]any{"content": truncate(text, 2000), "username": "LCM"}
	case FormatTeams:
		v = map[string]any{"type": "message", "attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4",
				"body": []any{
					map[string]any{"type": "TextBlock", "text": m.Title(), "weight": "Bolder", "size": "Medium", "wrap": true},
					map[string]any{"type": "TextBlock", "text": m.Text, "wrap": true},
					map[string]any{"type": "FactSet", "facts": []any{
						map[string]any{"title": "Severity", "value": m.Severity},
						map[string]any{"title": "Rule", "value": m.RuleName},
						map[string]any{"title": "State", "value": m.Kind},
					}},
				},
			},
		}}}
	case FormatNtfy:
		v = map[string]any{"topic": c.Topic, "title": m.Title(), "message": m.Text, "priority": priority(m), "tags": []string{m.Severity, m.Kind}}
	case FormatGotify:
		v = map[string]any{"title": m.Title(), "message": m.Text, "priority": priority(m) * 2}
		suffix = "/message"
	default:
		return nil, "", fmt.Errorf("notify: unknown webhook format %q", format)
	}
	b, err := json.Marshal(v)
	return b, suffix, err
}

// priority maps the severity to ntfy's 1–5 (Gotify doubles it to 0–10);
// a resolution is always low.
func priority(m Message) int {
	if m.Kind == "resolved" {
		return 2
	}
	switch m.Severity {
	case "critical":
		return 5
	case "warning":
		return 4
	default:
		return 3
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// HTTPClient returns the client a webhook channel uses: TLS 1.2+, the
// certificate verified against the system roots or the channel's CA, no
// redirects (a redirect could leave https or the verified host).
func HTTPClient(c Config) (*http.Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAPEM != "" {
		pool, err := CertPool(c.CAPEM)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	tr := &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: webhookTimeout, ResponseHeaderTimeout: webhookTimeout, MaxIdleConnsPerHost: 4,
		IdleConnTimeout: idleConnTimeout}
	return &http.Client{Transport: tr, Timeout: webhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// idleConnTimeout keeps a receiver's connection open between deliveries
// of a burst (a fresh TLS handshake per notification costs more CPU than
// the rest of the delivery) and closes it soon after.
const idleConnTimeout = 30 * time.Second

// maxClients bounds the cached clients (one per distinct CA setting).
const maxClients = 64

// clients caches webhook clients by their only input, the channel's CA
// PEM, so deliveries reuse connections; a changed CA is a new client.
var clients = struct {
	sync.Mutex
	m map[[32]byte]*http.Client
}{m: map[[32]byte]*http.Client{}}

func cachedClient(c Config) (*http.Client, error) {
	key := sha256.Sum256([]byte(c.CAPEM))
	clients.Lock()
	defer clients.Unlock()
	if cl := clients.m[key]; cl != nil {
		return cl, nil
	}
	cl, err := HTTPClient(c)
	if err != nil {
		return nil, err
	}
	if len(clients.m) >= maxClients {
		for k, old := range clients.m {
			old.CloseIdleConnections()
			delete(clients.m, k)
		}
	}
	clients.m[key] = cl
	return cl, nil
}

func sendWebhook(ctx context.Context, c Config, s Secrets, m Message) (Result, error) {
	if err := ValidateURL(s.URL); err != nil {
		return Result{}, err
	}
	body, suffix, err := Body(c.Format, c, m)
	if err != nil {
		return Result{}, err
	}
	client, err := cachedClient(c)
	if err != nil {
		return Result{}, err
	}
	target := strings.TrimRight(s.URL, "/") + suffix
	if suffix == "" {
		target = s.URL
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "LCM-alerts/1")
	switch c.Format {
	case FormatGeneric, "":
		ts := time.Now().Unix()
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(HeaderEvent, "alert."+m.Kind)
		if s.SigningSecret != "" {
			req.Header.Set(HeaderSignature, Sign(s.SigningSecret, ts, body))
		}
	case FormatNtfy:
		if s.Token != "" {
			req.Header.Set("Authorization", "Bearer "+s.Token)
		}
	case FormatGotify:
		req.Header.Set("X-Gotify-Key", s.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		// The error of net/http names the URL, whose path is secret.
		return Result{}, fmt.Errorf("webhook to %s: %s", MaskURL(s.URL), scrub(err.Error(), s.URL, target))
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	answer := strings.TrimSpace(fmt.Sprintf("HTTP %d %s", resp.StatusCode, strings.ToValidUTF8(string(b), "?")))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{Answer: answer}, fmt.Errorf("webhook to %s answered %s", MaskURL(s.URL), answer)
	}
	return Result{Answer: answer}, nil
}

// scrub removes the secret URL from an error text.
func scrub(msg string, urls ...string) string {
	for _, u := range urls {
		if u != "" {
			msg = strings.ReplaceAll(msg, u, MaskURL(u))
			msg = strings.ReplaceAll(msg, strconv.Quote(u), MaskURL(u))
		}
	}
	return msg
}
