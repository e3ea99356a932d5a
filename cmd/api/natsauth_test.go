package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestNATSAuthCommand: `lcm-api nats-auth` writes one account per flag with
// the process's permissions and a bcrypt hash of the password file, never
// the password; malformed flags are refused with the flag named.
func TestNATSAuthCommand(t *testing.T) {
	dir := t.TempDir()
	pw := func(name, v string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(v+"\n"), 0o600)
		return p
	}
	api, w1, gw, sc := pw("api", "api-plain"), pw("w1", "worker-plain"), pw("gw", "gw-plain"), pw("sc", "scanner-plain")
	var out, errb bytes.Buffer
	err := runNATSAuth([]string{"-api", "api=" + api, "-worker", "worker-dc1:dc1,dc3=" + w1, "-agentgw", "agentgw=" + gw, "-scanner", "scanner=" + sc}, &out, &errb)
	if err != nil {
		t.Fatalf("%v (%s)", err, errb.String())
	}
	text := out.String()
	for _, plain := range []string{"api-plain", "worker-plain", "gw-plain", "scanner-plain"} {
		if strings.Contains(text, plain) {
			t.Fatalf("plaintext password %q in the output", plain)
		}
	}
	body := text[strings.Index(text, "authorization: ")+len("authorization: "):]
	var doc struct {
		Users []struct {
			User, Password string
			Permissions    *struct {
				Publish, Subscribe struct{ Allow []string }
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("output is not the JSON block nats-server reads: %v\n%s", err, text)
	}
	want := map[string]string{"api": "api-plain", "worker-dc1": "worker-plain", "agentgw": "gw-plain", "scanner": "scanner-plain"}
	if len(doc.Users) != len(want) {
		t.Fatalf("users %+v", doc.Users)
	}
	for _, u := range doc.Users {
		if bcrypt.CompareHashAndPassword([]byte(u.Password), []byte(want[u.User])) != nil {
			t.Errorf("%s: password is not a bcrypt hash of its file", u.User)
		}
		if (u.User == "api") != (u.Permissions == nil) {
			t.Errorf("%s: permissions %+v", u.User, u.Permissions)
		}
		if u.User == "worker-dc1" && !strings.Contains(strings.Join(u.Permissions.Publish.Allow, " "), "worker-dc3") {
			t.Errorf("worker account misses its second segment: %v", u.Permissions.Publish.Allow)
		}
	}
	if !strings.Contains(text, `"lcm.jobctl.*"`) || strings.Contains(text, `\u003e`) {
		t.Fatalf("subjects must be written as they are:\n%s", text)
	}

	for name, args := range map[string][]string{
		"no accounts":      nil,
		"no file":          {"-api", "api"},
		"missing file":     {"-api", "api=" + filepath.Join(dir, "nope")},
		"empty file":       {"-api", "api=" + pw("empty", "")},
		"worker no seg":    {"-worker", "w=" + w1},
		"colon on api":     {"-api", "api:x=" + api},
		"duplicate user":   {"-api", "a=" + api, "-scanner", "a=" + sc},
		"stray argument":   {"-api", "api=" + api, "extra"},
		"unknown flag":     {"-bogus", "x"},
		"agentgw no file":  {"-agentgw", "gw="},
		"scanner no name":  {"-scanner", "=" + sc},
		"worker no name":   {"-worker", ":dc1=" + w1},
		"worker blank seg": {"-worker", "w: , =" + w1},
	} {
		if err := runNATSAuth(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
