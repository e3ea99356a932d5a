package config

import (
	"errors"
	"testing"
)

// FuzzDecode: reading config.json never panics, and a file it refuses is
// a *Error naming the file (and, with a position, a line ≥ 1); a file it
// accepts validates or is refused by Validate with the file's path, never
// a panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"port": 9310}`, `{"port": "x"}`, `{"nats": {"replicas": 9}}`, `{`, `{"unknown_key": 1}`, "{}\n{}",
		`{"jwt_secret": "` + "0123456789012345678901234567890123456789" + `", "request_timeout_seconds": 0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Defaults()
		err := decode("/etc/lcm/config.json", data, &cfg)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Path != "/etc/lcm/config.json" || (ce.Line != 0 && ce.Line < 1) {
				t.Fatalf("%q: %#v", data, err)
			}
			return
		}
		cfg.Path = "/etc/lcm/config.json"
		_ = cfg.Validate()
		_ = cfg.Redacted()
	})
}
