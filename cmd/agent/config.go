package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/lcmproject/lcm/pkg/agentproto"
)

// defaultConfigPath is where enroll writes and run reads the agent's
// configuration.
const defaultConfigPath = "/etc/lcm-agent/agent.json"

// config is the agent's whole state: who it is, its secret and the
// gateway it pins. The file is 0600 and its directory 0700.
type config struct {
	AgentID              string `json:"agent_id"`
	Secret               string `json:"secret"`
	GatewayURL           string `json:"gateway_url"`
	TLSFingerprintSHA256 string `json:"tls_fingerprint_sha256"`
}

func (c config) validate() error {
	t := agentproto.Token{AgentID: c.AgentID, Secret: c.Secret, GatewayURL: c.GatewayURL, TLSFingerprintSHA256: c.TLSFingerprintSHA256}
	return t.Validate()
}

// loadConfig reads and checks the config. Like ssh with its keys, it
// refuses a file that others can read: it holds the agent secret.
func loadConfig(path string) (config, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return config{}, fmt.Errorf("%s does not exist; run `lcm-agent enroll <token>` first", path)
	}
	if err != nil {
		return config{}, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return config{}, fmt.Errorf("%s is accessible by others (mode %04o); it holds the agent secret: chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return config{}, err
	}
	var c config
	if err := json.Unmarshal(b, &c); err != nil {
		return config{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.validate(); err != nil {
		return config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// configJSON writes the config 0600 in a 0700 directory (it holds the
// agent secret), fsynced before the rename: losing it means enrolling again.
var configJSON = jsonFile{perm: 0o600, dirPerm: 0o700, pattern: ".agent-*.json", sync: true}

// saveConfig writes the config atomically (temp file, fsync, rename) with
// mode 0600, creating its directory with 0700.
func saveConfig(path string, c config) error { return configJSON.writeJSON(path, c) }
