package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/auth/mail"
)

// smtpTimeout bounds one SMTP delivery. Why 20 s: a healthy relay answers
// within a few seconds; the delivery goroutine retries later rather than
// waiting on a hung one.
const smtpTimeout = 20 * time.Second

// MailConfig converts a channel's settings to the mailer's.
func MailConfig(c Config, s Secrets) (mail.Config, error) {
	mc := mail.Config{Host: c.Host, Port: c.Port, From: c.From, Username: c.Username, Password: s.Password, TLS: c.TLS, Timeout: smtpTimeout}
	if c.CAPEM != "" {
		pool, err := CertPool(c.CAPEM)
		if err != nil {
			return mail.Config{}, err
		}
		mc.RootCAs = pool
	}
	return mc, nil
}

func sendMail(ctx context.Context, c Config, s Secrets, m Message) (Result, error) {
	mc, err := MailConfig(c, s)
	if err != nil {
		return Result{}, err
	}
	reply, err := mail.SendReply(ctx, mc, mail.Message{ToList: c.To, Subject: m.Title(), Body: MailBody(m)})
	if err != nil {
		return Result{}, err
	}
	// The server's own reply to the message (e.g. "250 2.0.0 Ok: queued as
	// 4Xk2f"): what the relay said, not what LCM assumes.
	return Result{Answer: fmt.Sprintf("accepted by %s:%d for %s: %s", c.Host, c.Port, strings.Join(c.To, ", "), reply)}, nil
}

// MailBody is the plain-text body of a notification e-mail.
func MailBody(m Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n\n", m.Title(), m.Text)
	fmt.Fprintf(&b, "Rule:     %s (%s)\n", m.RuleName, m.RuleType)
	fmt.Fprintf(&b, "Severity: %s\n", m.Severity)
	if m.Server != "" {
		fmt.Fprintf(&b, "Server:   %s\n", m.Server)
	}
	fmt.Fprintf(&b, "State:    %s\n", m.Kind)
	fmt.Fprintf(&b, "Time:     %s\n", m.CreatedAt.UTC().Format(time.RFC3339))
	if m.EventID != "" {
		fmt.Fprintf(&b, "Event:    %s\n", m.EventID)
	}
	return b.String()
}
