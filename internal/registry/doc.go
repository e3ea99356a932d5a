// Package registry asks container registries for the current digest of an
// image tag over the OCI distribution API and compares it with the digests
// an engine holds locally: the newer-image check of the containers area
// (issue 15, docs/registries.md).
//
// It speaks plain net/http: HEAD /v2/<name>/manifests/<tag> with the
// manifest media types of OCI and Docker v2 in Accept, the digest from
// Docker-Content-Digest (a GET and a sha256 of the body when a registry
// leaves the header out), the anonymous bearer-token flow Docker Hub and
// GHCR use (401 with WWW-Authenticate: Bearer realm, service, scope → the
// token endpoint → retry), and Basic or token authentication with stored
// credentials for private registries.
//
// The Checker bounds its concurrency, caches digests per reference for a
// TTL and tokens until they expire, and is rate-limit aware: a 429 stops
// requests to that registry until Retry-After has passed, and when
// RateLimit-Remaining reaches 0 it no longer falls back to GET (on Docker
// Hub a HEAD does not count against the pull limit; a GET does).
package registry
