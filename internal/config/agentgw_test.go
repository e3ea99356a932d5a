package config

import (
	"strings"
	"testing"
)

// TestAgentGatewayAccounts: nats.agent_gateways needs user and password,
// and its passwords are masked in every dump.
func TestAgentGatewayAccounts(t *testing.T) {
	cfg := Defaults()
	cfg.JWTSecret = strings.Repeat("x", 32)
	cfg.NATS.AgentGateways = []NATSAccount{{User: "gw", Password: "gw-secret"}, {User: "nopass"}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "nats.agent_gateways[1]") ||
		strings.Contains(err.Error(), "nats.agent_gateways[0]") {
		t.Fatalf("validation: %v", err)
	}
	r := cfg.Redacted()
	if r.NATS.AgentGateways[0].Password != "***" || cfg.NATS.AgentGateways[0].Password != "gw-secret" {
		t.Fatalf("redacted %+v, original %+v", r.NATS.AgentGateways, cfg.NATS.AgentGateways)
	}
}

// TestScannerAccounts: nats.scanners needs user and password, masked in
// every dump.
func TestScannerAccounts(t *testing.T) {
	cfg := Defaults()
	cfg.JWTSecret = strings.Repeat("x", 32)
	cfg.NATS.Scanners = []NATSAccount{{User: "scanner", Password: "sc-secret"}, {Password: "x"}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "nats.scanners[1]") ||
		strings.Contains(err.Error(), "nats.scanners[0]") {
		t.Fatalf("validation: %v", err)
	}
	if r := cfg.Redacted(); r.NATS.Scanners[0].Password != "***" || cfg.NATS.Scanners[0].Password != "sc-secret" {
		t.Fatalf("redacted %+v", r.NATS.Scanners)
	}
}
