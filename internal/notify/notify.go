// Package notify delivers alert notifications through channels: SMTP mail
// (through internal/auth/mail, the code account e-mails use) and HTTPS
// webhooks in a generic signed JSON format or the formats of Slack,
// Mattermost, Microsoft Teams, ntfy, Gotify and Discord. It validates
// channel settings and knows which of them are secret; it stores nothing.
package notify

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// Channel types.
const (
	TypeSMTP    = "smtp"
	TypeWebhook = "webhook"
)

// Webhook formats.
const (
	FormatGeneric    = "generic"
	FormatSlack      = "slack"
	FormatMattermost = "mattermost"
	FormatTeams      = "teams"
	FormatNtfy       = "ntfy"
	FormatGotify     = "gotify"
	FormatDiscord    = "discord"
)

// Formats lists the webhook formats.
var Formats = []string{FormatGeneric, FormatSlack, FormatMattermost, FormatTeams, FormatNtfy, FormatGotify, FormatDiscord}

// SMTP TLS modes.
const (
	TLSNone     = "none"
	TLSStartTLS = "starttls"
	TLSImplicit = "tls"
)

// Config is a channel's non-secret settings (stored as plain JSON).
type Config struct {
	// SMTP
	Host     string   `json:"host,omitempty"`
	Port     int      `json:"port,omitempty"`
	TLS      string   `json:"tls,omitempty"`
	Username string   `json:"username,omitempty"`
	From     string   `json:"from,omitempty"`
	To       []string `json:"to,omitempty"`
	// Webhook
	Format string `json:"format,omitempty"`
	// CAPEM is an optional PEM bundle the receiver's certificate must
	// chain to instead of the system roots (a certificate is public).
	CAPEM string `json:"caPem,omitempty"`
	// Topic is ntfy's topic.
	Topic string `json:"topic,omitempty"`
}

// Secrets are a channel's secret settings (stored encrypted, never
// returned by the API, never logged).
type Secrets struct {
	Password string `json:"password,omitempty"`
	URL      string `json:"url,omitempty"`
	// Token is ntfy's access token or Gotify's application token.
	Token string `json:"token,omitempty"`
	// SigningSecret keys the generic format's HMAC-SHA256 signature.
	SigningSecret string `json:"signingSecret,omitempty"`
}

// Message is one notification.
type Message struct {
	// Kind is firing, repeat, resolved or test.
	Kind      string
	EventID   string
	RuleID    string
	RuleName  string
	RuleType  string
	Severity  string
	ServerID  string
	Server    string
	Text      string
	CreatedAt time.Time
}

// Title is the one-line summary of m.
func (m Message) Title() string {
	state := map[string]string{"firing": "ALERT", "repeat": "STILL FIRING", "resolved": "RESOLVED", "test": "TEST"}[m.Kind]
	if state == "" {
		state = strings.ToUpper(m.Kind)
	}
	t := fmt.Sprintf("[LCM %s] %s", state, m.RuleName)
	if m.Server != "" {
		t += " on " + m.Server
	}
	return t
}

// Result is the remote's answer to a delivery.
type Result struct {
	// Answer is what the receiver said (HTTP status and the start of the
	// body, or the SMTP server's acceptance).
	Answer string
}

// Send delivers m through a channel of type typ.
func Send(ctx context.Context, typ string, c Config, s Secrets, m Message) (Result, error) {
	switch typ {
	case TypeSMTP:
		return sendMail(ctx, c, s, m)
	case TypeWebhook:
		return sendWebhook(ctx, c, s, m)
	default:
		return Result{}, fmt.Errorf("notify: unknown channel type %q", typ)
	}
}

// Validate checks a channel's settings and fills defaults (SMTP port by
// TLS mode, webhook format generic). Every problem names its field. The
// system mail channel (system) may have no recipients: account mails name
// their own.
func Validate(typ string, c *Config, s Secrets, system bool) error {
	switch typ {
	case TypeSMTP:
		return validateSMTP(c, s, system)
	case TypeWebhook:
		return validateWebhook(c, s)
	default:
		return domain.Invalid("invalid_type", `type must be "smtp" or "webhook"`)
	}
}

func validateSMTP(c *Config, _ Secrets, system bool) error {
	c.Host = strings.TrimSpace(c.Host)
	if c.Host == "" || strings.ContainsAny(c.Host, " /:@") {
		return domain.Invalid("invalid_host", "host must be an SMTP server's host name or address")
	}
	if c.TLS == "" {
		c.TLS = TLSStartTLS
	}
	if !slices.Contains([]string{TLSNone, TLSStartTLS, TLSImplicit}, c.TLS) {
		return domain.Invalid("invalid_tls", `tls must be "none", "starttls" or "tls"`)
	}
	if c.Port == 0 {
		c.Port = map[string]int{TLSNone: 25, TLSStartTLS: 587, TLSImplicit: 465}[c.TLS]
	}
	if c.Port < 1 || c.Port > 65535 {
		return domain.Invalid("invalid_port", "port must be between 1 and 65535")
	}
	if c.From != "" {
		if _, err := mail.ParseAddress(c.From); err != nil {
			return domain.Invalid("invalid_from", "from must be an e-mail address")
		}
	}
	if (len(c.To) == 0 && !system) || len(c.To) > 50 {
		return domain.Invalid("invalid_to", "to must list 1 to 50 e-mail addresses")
	}
	for _, a := range c.To {
		if _, err := mail.ParseAddress(a); err != nil {
			return domain.Invalid("invalid_to", fmt.Sprintf("to: %q is not an e-mail address", a))
		}
	}
	if len(c.Username) > 255 {
		return domain.Invalid("invalid_username", "username is too long")
	}
	if c.CAPEM != "" {
		if _, err := CertPool(c.CAPEM); err != nil {
			return err
		}
	}
	c.Format, c.Topic = "", ""
	return nil
}

func validateWebhook(c *Config, s Secrets) error {
	if c.Format == "" {
		c.Format = FormatGeneric
	}
	if !slices.Contains(Formats, c.Format) {
		return domain.Invalid("invalid_format", "format must be one of "+strings.Join(Formats, ", "))
	}
	if err := ValidateURL(s.URL); err != nil {
		return err
	}
	if c.CAPEM != "" {
		if _, err := CertPool(c.CAPEM); err != nil {
			return err
		}
	}
	if c.Format == FormatNtfy && (c.Topic == "" || len(c.Topic) > 64 || strings.ContainsAny(c.Topic, "/ ?#")) {
		return domain.Invalid("invalid_topic", "ntfy needs a topic (up to 64 characters, no slash, space, ? or #)")
	}
	if c.Format != FormatNtfy {
		c.Topic = ""
	}
	if c.Format == FormatGotify && s.Token == "" {
		return domain.Invalid("invalid_token", "Gotify needs an application token")
	}
	c.Host, c.Port, c.TLS, c.Username, c.From, c.To = "", 0, "", "", "", nil
	return nil
}

// ValidateURL accepts only absolute https URLs with a host and without
// user information (credentials belong in the token).
func ValidateURL(raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return domain.Invalid("invalid_url", "url must be an absolute https:// URL")
	}
	if u.Scheme != "https" {
		return domain.Invalid("https_required", "webhook URLs must use https://; plain http is refused")
	}
	if u.User != nil {
		return domain.Invalid("invalid_url", "url must not contain a user name or password")
	}
	if len(raw) > 2048 {
		return domain.Invalid("invalid_url", "url is longer than 2048 characters")
	}
	return nil
}

// CertPool parses a PEM bundle of CA certificates.
func CertPool(pemText string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	rest := []byte(pemText)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, domain.Invalid("invalid_ca", "caPem holds a certificate that cannot be parsed")
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, domain.Invalid("invalid_ca", "caPem must hold at least one PEM certificate")
	}
	return pool, nil
}

// MaskURL shows a webhook URL's scheme and host only: the path and query
// of chat webhooks are the credential.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/…"
}
