package registry

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Docker Hub's names. An image named without a registry ("nginx",
// "grafana/grafana") lives on Docker Hub, whose distribution API answers
// at registry-1.docker.io; official images sit under "library/".
const (
	DockerHubHost = "registry-1.docker.io"
	dockerHubName = "docker.io"
	defaultTag    = "latest"
)

// Reference is a parsed image reference, normalised so that equal images
// compare equal: Host is the registry's API host (Docker Hub's aliases all
// become DockerHubHost), Repository the full path ("library/nginx").
type Reference struct {
	Host       string
	Repository string
	// Tag is "latest" when the reference names neither a tag nor a digest.
	Tag string
	// Digest is set when the reference pins one ("…@sha256:…").
	Digest string
}

// Limits from the distribution spec's grammar.
var (
	// A path component: lowercase alphanumerics separated by ".", "_",
	// "__" or runs of "-".
	componentRe = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
	tagRe       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRe    = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$`)
	imageIDRe   = regexp.MustCompile(`^(?:sha256:)?[a-f0-9]{64}$`)
	hostRe      = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$`)
)

// maxReferenceLen bounds what is parsed at all (Docker's own limit on the
// name is 255; a tag and digest add at most ~200).
const maxReferenceLen = 512

// ErrInvalidReference is wrapped by every parse error.
var ErrInvalidReference = errors.New("invalid image reference")

func invalid(s, why string) error {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidReference, s, why)
}

// ParseReference parses an image reference as the engines print it:
// "nginx", "nginx:1.25", "grafana/grafana", "ghcr.io/x/y:tag",
// "127.0.0.1:5000/app@sha256:…", "docker.io/library/nginx:1.25@sha256:…".
func ParseReference(s string) (Reference, error) {
	if s == "" || len(s) > maxReferenceLen {
		return Reference{}, invalid(s, "empty or too long")
	}
	// An image ID (what an engine shows for a container whose image lost
	// its name) is not a reference: "sha256:<hex>" would otherwise parse
	// as Docker Hub's library/sha256 with a tag.
	if imageIDRe.MatchString(s) {
		return Reference{}, invalid(s, "an image ID, not a name")
	}
	rest := s
	var r Reference
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		r.Digest, rest = rest[i+1:], rest[:i]
		if !digestRe.MatchString(r.Digest) {
			return Reference{}, invalid(s, "malformed digest")
		}
	}
	// A tag follows the last ":" after the last "/" (a ":" before it is a
	// registry port).
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		r.Tag, rest = rest[i+1:], rest[:i]
		if !tagRe.MatchString(r.Tag) {
			return Reference{}, invalid(s, "malformed tag")
		}
	}
	if rest == "" {
		return Reference{}, invalid(s, "no repository")
	}
	// The first component is a registry host when it looks like one
	// (has a "." or ":", or is "localhost"), as Docker decides it.
	host, path := "", rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		first := rest[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[") {
			host, path = first, rest[i+1:]
		}
	}
	if host == "" {
		host = dockerHubName
	}
	if !hostRe.MatchString(host) {
		return Reference{}, invalid(s, "malformed registry host")
	}
	r.Host = NormalizeHost(host)
	if r.Host == DockerHubHost && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	if len(path) > 255 {
		return Reference{}, invalid(s, "repository name too long")
	}
	for _, c := range strings.Split(path, "/") {
		if !componentRe.MatchString(c) {
			return Reference{}, invalid(s, "malformed repository name")
		}
	}
	r.Repository = path
	if r.Tag == "" && r.Digest == "" {
		r.Tag = defaultTag
	}
	return r, nil
}

// NormalizeHost maps Docker Hub's aliases to its API host and lowercases
// the name; other hosts stay as given (with their port).
func NormalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	switch h {
	case dockerHubName, "index.docker.io", "registry.hub.docker.com", DockerHubHost:
		return DockerHubHost
	}
	return h
}

// ValidHost reports whether h is a registry host name (with an optional
// port) as stored in the registry settings.
func ValidHost(h string) bool {
	return h != "" && len(h) <= 255 && hostRe.MatchString(h)
}

// Name is the repository with its host: "registry-1.docker.io/library/nginx".
func (r Reference) Name() string { return r.Host + "/" + r.Repository }

// String is the normalised reference.
func (r Reference) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}
