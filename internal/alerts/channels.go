package alerts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	netmail "net/mail"
	"slices"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/auth/mail"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/notify"
	"github.com/lcmproject/lcm/internal/store"
)

// Channel is a notification channel as the API shows it: its secrets are
// reduced to whether they are set (and the webhook URL to its host).
type Channel struct {
	ID      string        `json:"id"`
	Name    string        `json:"name"`
	Type    string        `json:"type"`
	Enabled bool          `json:"enabled"`
	System  bool          `json:"system"`
	Config  notify.Config `json:"config"`
	// Masked secrets.
	PasswordSet      bool      `json:"passwordSet"`
	URLSet           bool      `json:"urlSet"`
	URLMasked        string    `json:"urlMasked"`
	TokenSet         bool      `json:"tokenSet"`
	SigningSecretSet bool      `json:"signingSecretSet"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	// SigningSecret is set only in the answer that generated it.
	SigningSecret string `json:"signingSecret,omitempty"`
}

// ChannelInput creates or changes a channel. Nil fields keep the stored
// value (PATCH); a secret set to "" removes it.
type ChannelInput struct {
	Name          *string
	Type          *string
	Enabled       *bool
	Host          *string
	Port          *int
	TLS           *string
	Username      *string
	From          *string
	To            *[]string
	Format        *string
	CAPEM         *string
	Topic         *string
	Password      *string
	URL           *string
	Token         *string
	SigningSecret *string
}

type decoded struct {
	row store.NotificationChannel
	cfg notify.Config
	sec notify.Secrets
}

func decode(c store.NotificationChannel) (decoded, error) {
	d := decoded{row: c}
	if len(c.Config) > 0 {
		if err := json.Unmarshal(c.Config, &d.cfg); err != nil {
			return d, fmt.Errorf("alerts: channel %s settings: %w", c.ID, err)
		}
	}
	if len(c.Secrets) > 0 {
		if err := json.Unmarshal(c.Secrets, &d.sec); err != nil {
			return d, fmt.Errorf("alerts: channel %s secrets: %w", c.ID, err)
		}
	}
	return d, nil
}

func (d decoded) view() Channel {
	cfg := d.cfg
	if cfg.To == nil && d.row.Type == notify.TypeSMTP {
		cfg.To = []string{}
	}
	return Channel{ID: d.row.ID, Name: d.row.Name, Type: d.row.Type, Enabled: d.row.Enabled, System: d.row.System, Config: cfg,
		PasswordSet: d.sec.Password != "", URLSet: d.sec.URL != "", URLMasked: notify.MaskURL(d.sec.URL), TokenSet: d.sec.Token != "",
		SigningSecretSet: d.sec.SigningSecret != "", CreatedAt: d.row.CreatedAt, UpdatedAt: d.row.UpdatedAt}
}

// ListChannels returns every channel, masked.
func (s *Service) ListChannels(ctx context.Context) ([]Channel, error) {
	rows, err := s.store.ListChannels(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Channel, 0, len(rows))
	for _, r := range rows {
		d, err := decode(r)
		if err != nil {
			return nil, err
		}
		out = append(out, d.view())
	}
	return out, nil
}

// GetChannel returns one channel, masked.
func (s *Service) GetChannel(ctx context.Context, id string) (Channel, error) {
	r, err := s.store.GetChannel(ctx, id)
	if err != nil {
		return Channel{}, err
	}
	d, err := decode(r)
	if err != nil {
		return Channel{}, err
	}
	return d.view(), nil
}

func apply(d *decoded, in ChannelInput) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	set(&d.row.Name, in.Name)
	set(&d.row.Type, in.Type)
	if in.Enabled != nil {
		d.row.Enabled = *in.Enabled
	}
	set(&d.cfg.Host, in.Host)
	if in.Port != nil {
		d.cfg.Port = *in.Port
	}
	set(&d.cfg.TLS, in.TLS)
	set(&d.cfg.Username, in.Username)
	set(&d.cfg.From, in.From)
	if in.To != nil {
		d.cfg.To = nil
		for _, a := range *in.To {
			if a = strings.TrimSpace(a); a != "" {
				d.cfg.To = append(d.cfg.To, a)
			}
		}
	}
	set(&d.cfg.Format, in.Format)
	set(&d.cfg.CAPEM, in.CAPEM)
	set(&d.cfg.Topic, in.Topic)
	if in.Password != nil {
		d.sec.Password = *in.Password
	}
	set(&d.sec.URL, in.URL)
	if in.Token != nil {
		d.sec.Token = *in.Token
	}
	if in.SigningSecret != nil {
		d.sec.SigningSecret = *in.SigningSecret
	}
}

func (s *Service) save(ctx context.Context, d decoded) (Channel, error) {
	if err := prepare(&d); err != nil {
		return Channel{}, err
	}
	row, err := s.store.SaveChannel(ctx, d.row)
	if err != nil {
		return Channel{}, err
	}
	d.row = row
	return d.view(), nil
}

// prepare validates d and encodes its settings and secrets into its row.
func prepare(d *decoded) error {
	if n := d.row.Name; n == "" || len(n) > 100 {
		return domain.Invalid("invalid_name", "name must be 1 to 100 characters")
	}
	if err := notify.Validate(d.row.Type, &d.cfg, d.sec, d.row.System); err != nil {
		return err
	}
	if d.row.Type == notify.TypeSMTP {
		d.sec.URL, d.sec.Token, d.sec.SigningSecret = "", "", ""
	} else {
		d.sec.Password = ""
	}
	cfg, err := json.Marshal(d.cfg)
	if err != nil {
		return err
	}
	sec, err := json.Marshal(d.sec)
	if err != nil {
		return err
	}
	d.row.Config, d.row.Secrets = cfg, sec
	return nil
}

// CreateChannel stores a new channel. A generic webhook without a signing
// secret gets a random one, returned once in this answer.
func (s *Service) CreateChannel(ctx context.Context, in ChannelInput) (Channel, error) {
	d := decoded{row: store.NotificationChannel{Enabled: true}}
	apply(&d, in)
	generated := ""
	if d.row.Type == notify.TypeWebhook && (d.cfg.Format == "" || d.cfg.Format == notify.FormatGeneric) && d.sec.SigningSecret == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return Channel{}, err
		}
		generated = hex.EncodeToString(b)
		d.sec.SigningSecret = generated
	}
	c, err := s.save(ctx, d)
	if err != nil {
		return Channel{}, err
	}
	c.SigningSecret = generated
	return c, nil
}

// UpdateChannel changes a channel; the type of an existing channel stays.
func (s *Service) UpdateChannel(ctx context.Context, id string, in ChannelInput) (Channel, error) {
	r, err := s.store.GetChannel(ctx, id)
	if err != nil {
		return Channel{}, err
	}
	d, err := decode(r)
	if err != nil {
		return Channel{}, err
	}
	if in.Type != nil && *in.Type != r.Type {
		return Channel{}, domain.Invalid("type_immutable", "a channel's type cannot change; create a new channel")
	}
	apply(&d, in)
	return s.save(ctx, d)
}

// DeleteChannel removes a channel; rules that named it stop using it. The
// system mail channel cannot be deleted.
func (s *Service) DeleteChannel(ctx context.Context, id string) error {
	r, err := s.store.GetChannel(ctx, id)
	if err != nil {
		return err
	}
	if r.System {
		return domain.Conflict("system_channel", "the system mail channel cannot be deleted; change it under settings")
	}
	if err := s.store.DeleteChannel(ctx, id); err != nil {
		return err
	}
	// Rules stop naming it, so they stay valid to edit.
	rules, err := s.store.ListAlertRules(ctx)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if i := slices.Index(r.ChannelIDs, id); i >= 0 {
			r.ChannelIDs = slices.Delete(r.ChannelIDs, i, i+1)
			if _, err := s.store.SaveAlertRule(ctx, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestResult is the answer of a test send.
type TestResult struct {
	OK     bool   `json:"ok"`
	Answer string `json:"answer"`
	Error  string `json:"error,omitempty"`
}

// TestChannel sends a test notification now and reports the remote's
// answer. A failed send is a result, not an error: the API answers 200.
func (s *Service) TestChannel(ctx context.Context, id string, actor string) (TestResult, error) {
	r, err := s.store.GetChannel(ctx, id)
	if err != nil {
		return TestResult{}, err
	}
	d, err := decode(r)
	if err != nil {
		return TestResult{}, err
	}
	if d.row.Type == notify.TypeSMTP && len(d.cfg.To) == 0 {
		return TestResult{}, domain.Invalid("no_recipients", "the channel has no recipients to send a test to")
	}
	m := notify.Message{Kind: "test", RuleName: "Test notification", RuleType: "test", Severity: SeverityInfo,
		Text: "This is a test notification from LCM, sent by " + actor + ".", CreatedAt: s.now()}
	res, err := notify.Send(ctx, d.row.Type, d.cfg, d.sec, m)
	if err != nil {
		s.log.Warn("notification channel test failed", "channel", d.row.Name, "err", scrub(err.Error(), d.sec))
		return TestResult{OK: false, Answer: res.Answer, Error: scrub(err.Error(), d.sec)}, nil
	}
	return TestResult{OK: true, Answer: res.Answer}, nil
}

// scrub removes a channel's secrets from a text meant for logs or the API.
func scrub(msg string, sec notify.Secrets) string {
	for _, v := range []string{sec.URL, sec.Password, sec.Token, sec.SigningSecret} {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
	}
	return msg
}

// SystemMailKey is the fixed name of the managed system mail channel.
const SystemMailKey = "System mail"

// MailInput changes the system mail channel.
type MailInput = ChannelInput

// SystemMail returns the system mail channel (ok false: never set).
func (s *Service) SystemMail(ctx context.Context) (Channel, bool, error) {
	r, ok, err := s.store.SystemChannel(ctx)
	if err != nil || !ok {
		return Channel{}, false, err
	}
	d, err := decode(r)
	if err != nil {
		return Channel{}, false, err
	}
	return d.view(), true, nil
}

// SaveSystemMail creates or changes the system mail channel.
func (s *Service) SaveSystemMail(ctx context.Context, in ChannelInput) (Channel, error) {
	r, ok, err := s.store.SystemChannel(ctx)
	if err != nil {
		return Channel{}, err
	}
	d := decoded{row: store.NotificationChannel{Name: SystemMailKey, Type: notify.TypeSMTP, Enabled: true, System: true}}
	if ok {
		if d, err = decode(r); err != nil {
			return Channel{}, err
		}
	}
	in.Type, in.Name = nil, nil
	apply(&d, in)
	return s.save(ctx, d)
}

// SystemMailConfig is the mailer's source for account e-mails
// (invitations, password resets): the system mail channel's server.
func (s *Service) SystemMailConfig(ctx context.Context) (mail.Config, error) {
	r, ok, err := s.store.SystemChannel(ctx)
	if err != nil || !ok || !r.Enabled {
		return mail.Config{}, err
	}
	d, err := decode(r)
	if err != nil {
		return mail.Config{}, err
	}
	return notify.MailConfig(d.cfg, d.sec)
}

// ImportMailConfig moves the SMTP settings of config.json into the system
// mail channel once: it does nothing when the channel exists already. It
// reports whether it imported. Replicas starting together on a fresh
// database all run it: the insert is insert-or-ignore on the channel's
// unique name, so one creates the channel and the others see it made.
func (s *Service) ImportMailConfig(ctx context.Context, c mail.Config) (bool, error) {
	if c.Host == "" {
		return false, nil
	}
	_, ok, err := s.store.SystemChannel(ctx)
	if err != nil || ok {
		return false, err
	}
	tlsMode := c.TLS
	if tlsMode == "" {
		tlsMode = notify.TLSNone
	}
	port := c.Port
	d := decoded{row: store.NotificationChannel{Name: SystemMailKey, Type: notify.TypeSMTP, Enabled: true, System: true}}
	apply(&d, ChannelInput{Host: &c.Host, Port: &port, TLS: &tlsMode, Username: &c.Username, From: &c.From, Password: &c.Password})
	if err := prepare(&d); err != nil {
		return false, err
	}
	_, created, err := s.store.CreateChannelIfAbsent(ctx, d.row)
	if err != nil || created {
		return created, err
	}
	if _, ok, err := s.store.SystemChannel(ctx); err != nil || !ok {
		if err == nil {
			err = domain.Conflict("system_mail_name_taken", "a notification channel named \""+SystemMailKey+"\" exists and is not the system mail channel; rename it")
		}
		return false, err
	}
	return false, nil // another replica imported it a moment ago
}

// TestSystemMail sends a test e-mail to one address through the system
// mail channel and reports the server's answer.
func (s *Service) TestSystemMail(ctx context.Context, to, actor string) (TestResult, error) {
	if _, err := netmail.ParseAddress(to); err != nil {
		return TestResult{}, domain.Invalid("invalid_to", "to must be an e-mail address")
	}
	r, ok, err := s.store.SystemChannel(ctx)
	if err != nil {
		return TestResult{}, err
	}
	if !ok {
		return TestResult{}, domain.Invalid("mail_not_configured", "the system mail channel is not configured")
	}
	d, err := decode(r)
	if err != nil {
		return TestResult{}, err
	}
	cfg := d.cfg
	cfg.To = []string{to}
	m := notify.Message{Kind: "test", RuleName: "Test e-mail", RuleType: "test", Severity: SeverityInfo,
		Text: "This is a test e-mail from LCM's system mail channel, sent by " + actor + ".", CreatedAt: s.now()}
	res, err := notify.Send(ctx, notify.TypeSMTP, cfg, d.sec, m)
	if err != nil {
		return TestResult{OK: false, Error: scrub(err.Error(), d.sec)}, nil
	}
	return TestResult{OK: true, Answer: res.Answer}, nil
}
