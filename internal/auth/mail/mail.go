// Package mail sends LCM's account e-mails (invitations, password resets)
// over SMTP with github.com/wneessen/go-mail.
package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// sendTimeout bounds one SMTP exchange. Why 30 s: slow relays answer in a
// few seconds; a hung one must not hold a goroutine forever.
const sendTimeout = 30 * time.Second

// ErrNotConfigured means no SMTP host is set.
var ErrNotConfigured = errors.New("mail: no SMTP server configured")

// Config is the outgoing SMTP server.
type Config struct {
	Host     string
	Port     int
	From     string
	Username string
	Password string
	// TLS is "none", "starttls" or "tls".
	TLS string
	// RootCAs, when set, verifies the server's certificate instead of the
	// system roots (a private relay's CA; tests).
	RootCAs *x509.CertPool
	// Timeout bounds one exchange (0: sendTimeout).
	Timeout time.Duration
}

// Message is one plain-text e-mail to To, or to every address of ToList.
type Message struct {
	To      string
	ToList  []string
	Subject string
	Body    string
}

// Sender sends messages through the configured server, or through the
// server its source returns at the moment of sending (the system mail
// channel, which can change at run time).
type Sender struct {
	cfg    Config
	source func(context.Context) (Config, error)
}

// New returns a Sender; Configured reports whether it can send.
func New(cfg Config) *Sender { return &Sender{cfg: cfg} }

// NewFromSource returns a Sender that reads its server from src before
// every send.
func NewFromSource(src func(context.Context) (Config, error)) *Sender { return &Sender{source: src} }

func (s *Sender) config(ctx context.Context) (Config, error) {
	if s.source == nil {
		return s.cfg, nil
	}
	return s.source(ctx)
}

// Configured reports whether an SMTP host is set.
func (s *Sender) Configured(ctx context.Context) bool {
	if s == nil {
		return false
	}
	c, err := s.config(ctx)
	return err == nil && c.Host != ""
}

// Send delivers m in one SMTP exchange.
func (s *Sender) Send(ctx context.Context, m Message) error {
	if s == nil {
		return ErrNotConfigured
	}
	cfg, err := s.config(ctx)
	if err != nil {
		return fmt.Errorf("mail: read the mail settings: %w", err)
	}
	return Send(ctx, cfg, m)
}

// Send delivers m through cfg's server in one SMTP exchange.
func Send(ctx context.Context, cfg Config, m Message) error {
	_, err := SendReply(ctx, cfg, m)
	return err
}

// SendReply is Send that also returns the server's reply to the end of the
// message (the 250 line, e.g. "250 2.0.0 Ok: queued as 4Xk2f"): the answer
// a test send shows.
func SendReply(ctx context.Context, cfg Config, m Message) (string, error) {
	if cfg.Host == "" {
		return "", ErrNotConfigured
	}
	msg := gomail.NewMsg()
	from := cfg.From
	if from == "" {
		from = "lcm@localhost"
	}
	if err := msg.From(from); err != nil {
		return "", fmt.Errorf("mail: from %q: %w", from, err)
	}
	to := m.ToList
	if m.To != "" {
		to = append([]string{m.To}, to...)
	}
	if err := msg.To(to...); err != nil {
		return "", fmt.Errorf("mail: recipient: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetBodyString(gomail.TypeTextPlain, m.Body)
	port := cfg.Port
	if port == 0 {
		port = 25
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = sendTimeout
	}
	opts := []gomail.Option{gomail.WithPort(port), gomail.WithTimeout(timeout)}
	if cfg.RootCAs != nil {
		opts = append(opts, gomail.WithTLSConfig(&tls.Config{ServerName: cfg.Host, RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}))
	}
	switch cfg.TLS {
	case "tls":
		opts = append(opts, gomail.WithSSL())
	case "starttls":
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthPlain),
			gomail.WithUsername(cfg.Username), gomail.WithPassword(cfg.Password))
	}
	c, err := gomail.NewClient(cfg.Host, opts...)
	if err != nil {
		return "", fmt.Errorf("mail: client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return "", fmt.Errorf("mail: send via %s:%d: %w", cfg.Host, port, err)
	}
	// go-mail keeps the text of the final 250 reply (without its code).
	return strings.TrimSpace("250 " + msg.ServerResponse()), nil
}
