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

// TestExternalAgentGateways: agent_gateways entries need a wss:// URL
// ending in /mqtt and a SHA-256 fingerprint (colons and upper case are
// normalised, as lcm-agentgw's log or openssl print it); a name defaults
// to the URL's host and must be unique.
func TestExternalAgentGateways(t *testing.T) {
	fp := strings.Repeat("ab", 32)
	colons := strings.ToUpper(strings.Repeat("ab:", 31) + "ab")
	tests := []struct {
		name string
		gws  []AgentGateway
		bad  string // the key the error names; "" = valid
	}{
		{"valid", []AgentGateway{{URL: "wss://gw1.example:9320/mqtt", TLSFingerprintSHA256: fp}}, ""},
		{"colons", []AgentGateway{{URL: "wss://gw1.example:9320/mqtt", TLSFingerprintSHA256: "SHA256:" + colons}}, ""},
		{"http", []AgentGateway{{URL: "https://gw1.example:9320/mqtt", TLSFingerprintSHA256: fp}}, "agent_gateways[0].url"},
		{"path", []AgentGateway{{URL: "wss://gw1.example:9320/", TLSFingerprintSHA256: fp}}, "agent_gateways[0].url"},
		{"userinfo", []AgentGateway{{URL: "wss://u:p@gw1.example:9320/mqtt", TLSFingerprintSHA256: fp}}, "agent_gateways[0].url"},
		{"short fingerprint", []AgentGateway{{URL: "wss://gw1.example:9320/mqtt", TLSFingerprintSHA256: "abcd"}}, "agent_gateways[0].tls_fingerprint_sha256"},
		{"duplicate name", []AgentGateway{{URL: "wss://gw1.example:9320/mqtt", TLSFingerprintSHA256: fp},
			{URL: "wss://gw1.example:9320/mqtt", TLSFingerprintSHA256: fp}}, "agent_gateways[1].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.JWTSecret = strings.Repeat("x", 32)
			cfg.AgentGateways = tt.gws
			err := cfg.Validate()
			if tt.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				if g := cfg.AgentGateways[0]; g.Name != "gw1.example:9320" || g.TLSFingerprintSHA256 != fp {
					t.Fatalf("normalised %+v", g)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.bad) {
				t.Fatalf("want an error naming %s, got %v", tt.bad, err)
			}
		})
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
