package testutil

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mail is one message received by an SMTPSink. TLS tells whether the
// session was encrypted (STARTTLS or implicit TLS), User who authenticated.
type Mail struct {
	From string
	To   []string
	Data string
	TLS  bool
	User string
	// QueueID is the id the sink's 250 reply named ("250 2.0.0 Ok:
	// queued as <QueueID>", as Postfix answers), so a test can match a
	// client's reported answer with the message.
	QueueID string
}

// SMTPSinkOptions make a sink speak TLS and require authentication.
type SMTPSinkOptions struct {
	// STARTTLS offers the STARTTLS extension; Implicit wraps the whole
	// connection in TLS (port 465 style). Both use a fresh self-signed
	// certificate for 127.0.0.1 (CAPEM).
	STARTTLS bool
	Implicit bool
	// User and Password, when set, are required (AUTH PLAIN, only after
	// TLS is up, as real servers do).
	User     string
	Password string
	// AuthWithoutTLS offers AUTH on a plain connection (clients allow
	// that only towards localhost).
	AuthWithoutTLS bool
}

// SMTPSink is a minimal real SMTP server (RFC 5321 without extensions) on
// 127.0.0.1 that records every message, for tests that follow links in
// e-mails. It closes when the test ends.
type SMTPSink struct {
	Addr string
	Port int
	// CAPEM is the PEM certificate a client must trust (TLS sinks).
	CAPEM string
	// AuthFailures counts rejected AUTH attempts.
	AuthFailures int
	ln           net.Listener
	opt          SMTPSinkOptions
	tlsCfg       *tls.Config
	mu           sync.Mutex
	msgs         []Mail
}

// StartSMTPSink starts a sink on a free port.
func StartSMTPSink(t testing.TB) *SMTPSink { return StartSMTPSinkWith(t, SMTPSinkOptions{}) }

// StartSMTPSinkWith starts a sink with TLS and authentication options.
func StartSMTPSinkWith(t testing.TB, o SMTPSinkOptions) *SMTPSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPSink{ln: ln, Addr: ln.Addr().String(), Port: ln.Addr().(*net.TCPAddr).Port, opt: o}
	if o.STARTTLS || o.Implicit {
		ca := NewTestCA(t)
		s.CAPEM = ca.CertPEM
		s.tlsCfg = &tls.Config{Certificates: []tls.Certificate{ca.ServerCert(t, "127.0.0.1")}, MinVersion: tls.VersionTLS12}
		if o.Implicit {
			s.ln = tls.NewListener(ln, s.tlsCfg)
		}
	}
	go s.serve()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *SMTPSink) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.session(c)
	}
}

func (s *SMTPSink) session(c net.Conn) {
	defer func() { c.Close() }()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	reply := func(line string) { w.WriteString(line + "\r\n"); w.Flush() }
	reply("220 lcm-test-sink ESMTP")
	encrypted := s.opt.Implicit
	user := ""
	var cur Mail
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		cmd := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(cmd, "EHLO"):
			w.WriteString("250-lcm-test-sink\r\n250-8BITMIME\r\n")
			if s.opt.STARTTLS && !encrypted {
				w.WriteString("250-STARTTLS\r\n")
			}
			if s.opt.User != "" && (encrypted || s.opt.AuthWithoutTLS) {
				w.WriteString("250-AUTH PLAIN\r\n")
			}
			w.WriteString("250 SMTPUTF8\r\n")
			w.Flush()
		case cmd == "STARTTLS" && s.opt.STARTTLS && !encrypted:
			reply("220 ready to start TLS")
			tc := tls.Server(c, s.tlsCfg)
			if err := tc.Handshake(); err != nil {
				return
			}
			c, encrypted = tc, true
			r, w = bufio.NewReader(c), bufio.NewWriter(c)
			cur = Mail{}
		case strings.HasPrefix(cmd, "AUTH PLAIN"):
			arg := strings.TrimSpace(line[len("AUTH PLAIN"):])
			if arg == "" {
				reply("334 ")
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				arg = strings.TrimSpace(l)
			}
			raw, err := base64.StdEncoding.DecodeString(arg)
			parts := bytes.Split(raw, []byte{0})
			if !(encrypted || s.opt.AuthWithoutTLS) || err != nil || len(parts) != 3 || string(parts[1]) != s.opt.User || string(parts[2]) != s.opt.Password {
				s.mu.Lock()
				s.AuthFailures++
				s.mu.Unlock()
				reply("535 5.7.8 authentication credentials invalid")
				continue
			}
			user = string(parts[1])
			reply("235 2.7.0 authentication successful")
		case strings.HasPrefix(cmd, "HELO"):
			reply("250 lcm-test-sink")
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			if s.opt.STARTTLS && !encrypted {
				reply("530 5.7.0 must issue a STARTTLS command first")
				continue
			}
			if s.opt.User != "" && user == "" {
				reply("530 5.7.0 authentication required")
				continue
			}
			cur = Mail{From: addr(line[10:]), TLS: encrypted, User: user}
			reply("250 OK")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			cur.To = append(cur.To, addr(line[8:]))
			reply("250 OK")
		case cmd == "DATA":
			reply("354 end with <CRLF>.<CRLF>")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			cur.Data = b.String()
			s.mu.Lock()
			cur.QueueID = fmt.Sprintf("4%07X", len(s.msgs)+1+int(time.Now().UnixNano()&0xffff)<<8)
			s.msgs = append(s.msgs, cur)
			s.mu.Unlock()
			reply("250 2.0.0 Ok: queued as " + cur.QueueID)
		case cmd == "RSET":
			cur = Mail{}
			reply("250 OK")
		case cmd == "NOOP":
			reply("250 OK")
		case cmd == "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 command not implemented")
		}
	}
}

func addr(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i]
	}
	return strings.Trim(s, "<>")
}

// Messages returns the messages received so far.
func (s *SMTPSink) Messages() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.msgs...)
}

// WaitFor waits until a message to rcpt arrived and returns the newest.
func (s *SMTPSink) WaitFor(t testing.TB, rcpt string, timeout time.Duration) Mail {
	t.Helper()
	var got Mail
	WaitFor(t, timeout, "an e-mail to "+rcpt, func() bool {
		for _, m := range s.Messages() {
			for _, to := range m.To {
				if strings.EqualFold(to, rcpt) {
					got = m
				}
			}
		}
		return got.Data != ""
	})
	return got
}

// Count returns how many messages went to rcpt.
func (s *SMTPSink) Count(rcpt string) int {
	n := 0
	for _, m := range s.Messages() {
		for _, to := range m.To {
			if strings.EqualFold(to, rcpt) {
				n++
			}
		}
	}
	return n
}

// Text returns the decoded body of a single-part message (quoted-printable
// and base64 transfer encodings are undone) with its headers dropped.
func (m Mail) Text() string {
	msg, err := mail.ReadMessage(strings.NewReader(m.Data))
	if err != nil {
		return m.Data
	}
	var r io.Reader = msg.Body
	switch strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	b, _ := io.ReadAll(r)
	return string(b)
}
