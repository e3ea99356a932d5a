package config

import (
	"fmt"
	"os"
	"strings"
)

// SecretEnv returns a secret given in the environment: the value of key,
// or the contents of the file that key+"_FILE" names (container secrets
// mounted as files, e.g. /run/secrets/nats_password). Trailing newlines of
// the file are dropped; nothing else is, so a secret may end in a space.
// Setting both is refused (which one wins would be a guess), and so is an
// empty file (an unset secret would silently become ""). ok is false when
// neither is set.
func SecretEnv(getenv func(string) string, key string) (value string, ok bool, err error) {
	v, path := getenv(key), getenv(key+"_FILE")
	switch {
	case v != "" && path != "":
		return "", false, fmt.Errorf("environment: set %s or %s_FILE, not both", key, key)
	case v != "":
		return v, true, nil
	case path == "":
		return "", false, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, fmt.Errorf("environment %s_FILE: %w", key, err)
	}
	v = strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", false, fmt.Errorf("environment %s_FILE: %s is empty", key, path)
	}
	return v, true, nil
}

// FirstSecretEnv is SecretEnv over several names of one secret (a
// process-specific name first, then a shared older one): the key that is
// set wins; setting two of them is refused.
func FirstSecretEnv(getenv func(string) string, keys ...string) (value string, ok bool, err error) {
	var found string
	for _, k := range keys {
		v, set, err := SecretEnv(getenv, k)
		if err != nil {
			return "", false, err
		}
		if !set {
			continue
		}
		if found != "" {
			return "", false, fmt.Errorf("environment: %s and %s give the same secret; set one", found, k)
		}
		found, value = k, v
	}
	return value, found != "", nil
}
