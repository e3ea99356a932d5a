package bus

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// AuthorizationConf renders users as the authorization block of a
// nats-server configuration file, for an external NATS (cluster) that LCM's
// processes connect to with their own accounts. hash turns a password into
// what the file holds (a bcrypt hash: nats-server compares a password
// starting with "$2" as bcrypt). The permissions are exactly those a
// listening embedded NATS enforces for the same users.
//
// nats-server's configuration format is a superset of JSON, so the block
// is JSON (quoted strings keep "$" from being read as a variable).
func AuthorizationConf(users []User, hash func(password string) (string, error)) ([]byte, error) {
	type subjects struct {
		Allow []string `json:"allow"`
	}
	type responses struct {
		Max int `json:"max"`
	}
	type perms struct {
		Publish   *subjects  `json:"publish,omitempty"`
		Subscribe *subjects  `json:"subscribe,omitempty"`
		Responses *responses `json:"allow_responses,omitempty"`
	}
	type user struct {
		User        string `json:"user"`
		Password    string `json:"password"`
		Permissions *perms `json:"permissions,omitempty"`
	}
	seen := map[string]bool{}
	out := make([]user, 0, len(users))
	for _, u := range users {
		if u.Name == "" || u.Password == "" {
			return nil, fmt.Errorf("bus: NATS user %q needs a name and a password", u.Name)
		}
		if seen[u.Name] {
			return nil, fmt.Errorf("bus: NATS user %q given twice", u.Name)
		}
		seen[u.Name] = true
		h, err := hash(u.Password)
		if err != nil {
			return nil, fmt.Errorf("bus: hash the password of %s: %w", u.Name, err)
		}
		cu := user{User: u.Name, Password: h}
		if p := u.Permissions; p != nil {
			cu.Permissions = &perms{Publish: &subjects{Allow: p.Publish}, Subscribe: &subjects{Allow: p.Subscribe}}
			if p.ResponseMaxMsgs > 0 {
				cu.Permissions.Responses = &responses{Max: p.ResponseMaxMsgs}
			}
		}
		out = append(out, cu)
	}
	var buf bytes.Buffer
	buf.WriteString("# NATS accounts of LCM's processes, least privilege each (lcm-api nats-auth).\n# Passwords are bcrypt hashes; the processes hold the plaintext.\nauthorization: ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // ">" is a subject wildcard, not markup
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"users": out}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
