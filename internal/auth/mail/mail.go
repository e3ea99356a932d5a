// Package mail sends LCM's account e-mails (invitations, password resets)
// over SMTP with github.com/wneessen/go-mail.
package mail

import (
	"context"
	"errors"
	"fmt"
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
}

// Message is one plain-text e-mail.
type Message struct {
	To      string
	Subject string
	Body    string
}

// Sender sends messages through the configured server.
type Sender struct{ cfg Config }

// New returns a Sender; Configured reports whether it can send.
func New(cfg Config) *Sender { return &Sender{cfg: cfg} }

// Configured reports whether an SMTP host is set.
func (s *Sender) Configured() bool { return s != nil && s.cfg.Host != "" }

// Send delivers m in one SMTP exchange.
func (s *Sender) Send(ctx context.Context, m Message) error {
	if !s.Configured() {
		return ErrNotConfigured
	}
	msg := gomail.NewMsg()
	from := s.cfg.From
	if from == "" {
		from = "lcm@localhost"
	}
	if err := msg.From(from); err != nil {
		return fmt.Errorf("mail: from %q: %w", from, err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("mail: recipient: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetBodyString(gomail.TypeTextPlain, m.Body)
	port := s.cfg.Port
	if port == 0 {
		port = 25
	}
	opts := []gomail.Option{gomail.WithPort(port), gomail.WithTimeout(sendTimeout)}
	switch s.cfg.TLS {
	case "tls":
		opts = append(opts, gomail.WithSSL())
	case "starttls":
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	}
	if s.cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthPlain),
			gomail.WithUsername(s.cfg.Username), gomail.WithPassword(s.cfg.Password))
	}
	c, err := gomail.NewClient(s.cfg.Host, opts...)
	if err != nil {
		return fmt.Errorf("mail: client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("mail: send via %s:%d: %w", s.cfg.Host, port, err)
	}
	return nil
}
