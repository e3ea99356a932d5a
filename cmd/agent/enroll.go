package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/eclipse/paho.golang/paho"

	"github.com/lcmproject/lcm/pkg/agentproto"
)

// reasonBadCredentials is MQTT 5's CONNACK "bad user name or password".
const reasonBadCredentials = 0x86

// runEnroll: lcm-agent enroll [-config path] [-force] <token>
//
//  1. parse the token;
//  2. connect to its gateway over TLS and check the pinned fingerprint —
//     on a mismatch stop here, nothing written;
//  3. generate the agent's own secret and write the config (0600);
//  4. connect over MQTT with the token's secret, handing over the hash of
//     the new secret (agentproto.EnrollProperty): the gateway swaps it in,
//     and the token is spent. On failure the config is removed again.
func runEnroll(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("lcm-agent enroll", flag.ContinueOnError)
	flags.SetOutput(stderr)
	path := flags.String("config", defaultConfigPath, "where to write the agent configuration")
	force := flags.Bool("force", false, "overwrite an existing configuration (re-enroll)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return errors.New("usage: lcm-agent enroll [-config path] [-force] <token>")
	}
	tok, err := agentproto.ParseToken(flags.Arg(0))
	if err != nil {
		return err
	}
	if _, err := os.Stat(*path); err == nil && !*force {
		return fmt.Errorf("%s exists: this host is already enrolled (use -force to enroll again)", *path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := checkPin(ctx, tok.GatewayURL, tok.TLSFingerprintSHA256); err != nil {
		return fmt.Errorf("enroll: %w", err)
	}
	secret, err := agentproto.NewSecret()
	if err != nil {
		return err
	}
	cfg := config{AgentID: tok.AgentID, Secret: secret, GatewayURL: tok.GatewayURL, TLSFingerprintSHA256: tok.TLSFingerprintSHA256}
	if err := saveConfig(*path, cfg); err != nil {
		return fmt.Errorf("enroll: write %s: %w", *path, err)
	}
	if err := enrollConnect(ctx, tok, agentproto.SecretHash(secret)); err != nil {
		_ = os.Remove(*path)
		return fmt.Errorf("enroll: %w", err)
	}
	fmt.Fprintf(stdout, "enrolled as agent %s at %s\nconfiguration written to %s (mode 0600)\nstart the agent with: lcm-agent run -config %s\n",
		tok.AgentID, tok.GatewayURL, *path, *path)
	return nil
}

// enrollConnect performs the one MQTT CONNECT that spends the token.
func enrollConnect(ctx context.Context, tok agentproto.Token, newHash string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*dialTimeout)
	defer cancel()
	conn, err := dialWS(ctx, tok.GatewayURL, tok.TLSFingerprintSHA256)
	if err != nil {
		return err
	}
	cli := paho.NewClient(paho.ClientConfig{ClientID: tok.AgentID, Conn: conn})
	ca, err := cli.Connect(ctx, &paho.Connect{
		ClientID: tok.AgentID, CleanStart: true, KeepAlive: 30,
		Username: tok.AgentID, UsernameFlag: true, Password: []byte(tok.Secret), PasswordFlag: true,
		Properties: &paho.ConnectProperties{User: paho.UserProperties{{Key: agentproto.EnrollProperty, Value: newHash}}},
	})
	if err != nil {
		conn.Close()
		if ca != nil && ca.ReasonCode == reasonBadCredentials {
			return errors.New("the gateway rejected the enrollment token (unknown, revoked or already used); ask for a new token")
		}
		return err
	}
	_ = cli.Disconnect(&paho.Disconnect{ReasonCode: 0})
	return nil
}
