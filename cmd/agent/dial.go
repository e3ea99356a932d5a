package main

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lcmproject/lcm/pkg/agentproto"
)

// dialTimeout bounds TCP connect, TLS and WebSocket handshakes. Why 15 s:
// agents sit behind NAT and slow uplinks; longer only delays the retry.
const dialTimeout = 15 * time.Second

// PinError says the gateway presented another certificate than the one
// pinned at enrollment: nothing is sent to it.
type PinError struct {
	Want, Got string
}

func (e *PinError) Error() string {
	return fmt.Sprintf("gateway TLS certificate fingerprint mismatch: pinned sha256 %s, got %s; refusing to talk to it", e.Want, e.Got)
}

// pinnedTLS trusts exactly one certificate: the one whose SHA-256 was
// pinned at enrollment. No CA is consulted — the gateway's certificate is
// usually self-signed, and the pin is a stronger statement than any CA's.
// The TLS handshake still proves the server holds that certificate's key.
func pinnedTLS(fingerprint string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Chain and name checks are replaced by VerifyConnection below.
		InsecureSkipVerify: true, //nolint:gosec // certificate pinning, see VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("gateway presented no certificate")
			}
			got := agentproto.FingerprintSHA256(cs.PeerCertificates[0].Raw)
			if subtle.ConstantTimeCompare([]byte(got), []byte(fingerprint)) != 1 {
				return &PinError{Want: fingerprint, Got: got}
			}
			return nil
		},
	}
}

// checkPin connects to the gateway's TLS port and verifies the pin only;
// enroll runs it before it writes anything.
func checkPin(ctx context.Context, gatewayURL, fingerprint string) error {
	u, err := url.Parse(gatewayURL)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout}, Config: pinnedTLS(fingerprint)}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return err
	}
	return c.Close()
}

// dialWS opens the MQTT WebSocket (subprotocol "mqtt") with the pin.
func dialWS(ctx context.Context, gatewayURL, fingerprint string) (net.Conn, error) {
	d := websocket.Dialer{
		TLSClientConfig:  pinnedTLS(fingerprint),
		HandshakeTimeout: dialTimeout,
		Subprotocols:     []string{"mqtt"},
	}
	c, resp, err := d.DialContext(ctx, gatewayURL, nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("websocket to %s: %w (HTTP %d)", gatewayURL, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("websocket to %s: %w", gatewayURL, err)
	}
	return &wsConn{Conn: c}, nil
}

// wsConn presents a WebSocket as the byte stream paho reads and writes;
// writes are serialised (paho requires a thread-safe writer).
type wsConn struct {
	*websocket.Conn
	r  io.Reader
	wm sync.Mutex // one WebSocket writer at a time (gorilla's rule)
	pm sync.Mutex // one MQTT packet at a time (paho's Locker); taken before wm
}

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			op, r, err := c.NextReader()
			if err != nil {
				return 0, err
			}
			if op != websocket.BinaryMessage {
				return 0, errors.New("websocket message is not binary")
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if errors.Is(err, io.EOF) {
			c.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.wm.Lock()
	defer c.wm.Unlock()
	if err := c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *wsConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// Lock and Unlock make wsConn a sync.Locker, which paho's packet writer
// uses to keep one packet's bytes together.
func (c *wsConn) Lock()   { c.pm.Lock() }
func (c *wsConn) Unlock() { c.pm.Unlock() }
