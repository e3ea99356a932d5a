package containers

import (
	"bytes"
	"fmt"
	"strings"
)

// ValidName reports whether s is a container or compose project name (or
// a container id): what docker and podman accept, [a-zA-Z0-9][a-zA-Z0-9_.-]*,
// at most 128 characters.
func ValidName(s string) bool {
	if s == "" || len(s) > 128 || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !alnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// ValidImageRef reports whether s is an image reference (repository with
// optional registry host:port, tag and/or digest) or an image id; at most
// 255 characters, no shell-special characters.
func ValidImageRef(s string) bool {
	if s == "" || len(s) > 255 || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !alnum(c) && !strings.ContainsRune("._-/:@", rune(c)) {
			return false
		}
	}
	return !strings.Contains(s, "//") && !strings.HasSuffix(s, "/") && !strings.HasSuffix(s, ":")
}

// ValidPath reports whether s is an absolute path without control
// characters (it is shell-quoted anyway), at most 4096 bytes.
func ValidPath(s string) bool {
	if !strings.HasPrefix(s, "/") || len(s) > 4096 {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}

// ComposeTools are the compose front ends LCM runs.
var ComposeTools = []string{"docker compose", "docker-compose", "podman compose", "podman-compose"}

// ValidComposeTool reports whether s is one of ComposeTools.
func ValidComposeTool(s string) bool { return contains(ComposeTools, s) }

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ParseBuildCache reads the "Build Cache" size from `docker system df
// --format json` (JSON lines with Type and Size).
func ParseBuildCache(b []byte) (int64, error) {
	type row struct {
		Type string `json:"Type"`
		Size string `json:"Size"`
	}
	rows, err := decodeEntries[row](bytes.TrimSpace(b))
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		if r.Type == "Build Cache" {
			return ParseHumanSize(r.Size), nil
		}
	}
	return 0, fmt.Errorf("%w: no build cache row", ErrFormat)
}
