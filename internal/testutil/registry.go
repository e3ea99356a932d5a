package testutil

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"
)

// RegistryOptions configure StartRegistry. Without Htpasswd or Token the
// registry is open (anyone pulls and pushes).
type RegistryOptions struct {
	// RootDir is the storage directory; a temp dir when empty. Two
	// registries over the same RootDir serve the same images (push to an
	// open one, read through one with authentication).
	RootDir string
	// Htpasswd enables Basic authentication with these users (bcrypt).
	Htpasswd map[string]string
	// Token enables the bearer-token flow with a token server in this
	// process that follows the Docker token spec.
	Token *TokenAuth
}

// TokenAuth configures the token server: Users may pull and push; an
// anonymous caller may pull when AnonymousPull is set (Docker Hub's and
// GHCR's shape for public images).
type TokenAuth struct {
	Users         map[string]string
	AnonymousPull bool
}

// Registry is a running Debian docker-registry (distribution 2.8) on
// 127.0.0.1 over plain HTTP.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of image references.
	Host    string
	URL     string
	RootDir string
	// TokenRequests counts the token server's answers (0 without Token).
	tokenRequests *counter
}

type counter struct {
	mu sync.Mutex
	n  int
}

// TokenRequests returns how many tokens the token server issued.
func (r *Registry) TokenRequests() int {
	if r.tokenRequests == nil {
		return 0
	}
	r.tokenRequests.mu.Lock()
	defer r.tokenRequests.mu.Unlock()
	return r.tokenRequests.n
}

// RequireRegistryTools returns the paths of docker-registry and skopeo,
// or marks the test unavailable (a failure in CI).
func RequireRegistryTools(t testing.TB) (registry, skopeo string) {
	t.Helper()
	for _, p := range []string{"/usr/bin/docker-registry"} {
		if _, err := os.Stat(p); err == nil {
			registry = p
		}
	}
	if registry == "" {
		registry = RequireTool(t, "docker-registry")
	}
	return registry, RequireTool(t, "skopeo")
}

// StartRegistry starts a real registry for the test and stops it at the
// end. It waits until /v2/ answers.
func StartRegistry(t testing.TB, o RegistryOptions) *Registry {
	t.Helper()
	bin, _ := RequireRegistryTools(t)
	dir := t.TempDir()
	if o.RootDir == "" {
		o.RootDir = filepath.Join(dir, "storage")
	}
	port := FreePort(t)
	r := &Registry{Host: fmt.Sprintf("127.0.0.1:%d", port), RootDir: o.RootDir}
	r.URL = "http://" + r.Host
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  redirect:
    disable: true
http:
  addr: %s
  secret: lcm-test-registry-secret
`, o.RootDir, r.Host)
	switch {
	case o.Htpasswd != nil:
		var b strings.Builder
		users := make([]string, 0, len(o.Htpasswd))
		for u := range o.Htpasswd {
			users = append(users, u)
		}
		sort.Strings(users)
		for _, u := range users {
			h, err := bcrypt.GenerateFromPassword([]byte(o.Htpasswd[u]), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s:%s\n", u, h)
		}
		pw := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(pw, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: lcm-test\n    path: %s\n", pw)
	case o.Token != nil:
		ts := startTokenServer(t, o.Token)
		r.tokenRequests = ts.issued
		bundle := filepath.Join(dir, "token-ca.pem")
		if err := os.WriteFile(bundle, []byte(ts.ca.CertPEM), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("auth:\n  token:\n    realm: %s/token\n    service: %s\n    issuer: %s\n    rootcertbundle: %s\n",
			ts.url, tokenService, tokenIssuer, bundle)
	}
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", path)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(r.URL + "/v2/")
		if err == nil {
			resp.Body.Close()
			return r
		}
		select {
		case <-done:
			t.Fatalf("docker-registry exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not answer on %s: %s", r.Host, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Token server (Docker token spec: GET realm?service=&scope=, Basic
// credentials optional, JSON {token, access_token, expires_in, issued_at};
// the token is a JWT signed with a key whose certificate is in the
// registry's rootcertbundle, named in the x5c header).
const (
	tokenService = "lcm-test-registry"
	tokenIssuer  = "lcm-test-token-issuer"
	// tokenLifetime is short enough that no test outlives it by accident
	// unnoticed and long enough for any test run.
	tokenLifetime = 300
)

type tokenServer struct {
	url    string
	ca     *TestCA
	issued *counter
}

func startTokenServer(t testing.TB, o *TokenAuth) *tokenServer {
	t.Helper()
	ts := &tokenServer{ca: NewTestCA(t), issued: &counter{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.url = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		user := ""
		if u, p, ok := r.BasicAuth(); ok {
			if want, known := o.Users[u]; !known || want != p {
				w.Header().Set("WWW-Authenticate", `Basic realm="lcm-test-token"`)
				http.Error(w, `{"details":"wrong user name or password"}`, http.StatusUnauthorized)
				return
			}
			user = u
		}
		var access []map[string]any
		for _, s := range r.URL.Query()["scope"] {
			for _, one := range strings.Fields(s) {
				parts := strings.Split(one, ":")
				if len(parts) < 3 || parts[0] != "repository" {
					continue
				}
				name := strings.Join(parts[1:len(parts)-1], ":")
				var granted []string
				for _, a := range strings.Split(parts[len(parts)-1], ",") {
					if (a == "pull" && (user != "" || o.AnonymousPull)) || (a == "push" && user != "") {
						granted = append(granted, a)
					}
				}
				if len(granted) > 0 {
					access = append(access, map[string]any{"type": "repository", "name": name, "actions": granted})
				}
			}
		}
		now := time.Now()
		claims := jwt.MapClaims{"iss": tokenIssuer, "sub": user, "aud": r.URL.Query().Get("service"),
			"exp": now.Add(tokenLifetime * time.Second).Unix(), "nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(),
			"jti": uuid.NewString(), "access": access}
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
		tok.Header["x5c"] = []string{base64.StdEncoding.EncodeToString(ts.ca.Cert.Raw)}
		signed, err := tok.SignedString(ts.ca.Key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		ts.issued.mu.Lock()
		ts.issued.n++
		ts.issued.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"token": signed, "access_token": signed, "expires_in": tokenLifetime,
			"issued_at": now.UTC().Format(time.RFC3339)})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ts
}

// TestImage is a tiny single-layer image: Files become the layer's
// content (distinct content, distinct digest); Cmd is the image's default
// command (for an image a container runs, Files must then hold it).
type TestImage struct {
	Files map[string]string
	Cmd   []string
}

// PushImage builds the image as an OCI layout and copies it to
// repo:tag with skopeo (creds "user:pass" or ""), returning the manifest
// digest the registry reports for the tag afterwards (skopeo inspect).
func (r *Registry) PushImage(t testing.TB, repo, tag string, img TestImage, creds string) string {
	t.Helper()
	layout := t.TempDir()
	if err := WriteOCILayout(layout, tag, img); err != nil {
		t.Fatal(err)
	}
	return r.Copy(t, "oci:"+layout+":"+tag, repo, tag, creds)
}

// Copy copies an image from any skopeo source ("oci:DIR:TAG",
// "oci-archive:FILE", "containers-storage:localhost/x:y" after a `podman
// import`, …) to repo:tag on the registry and returns the digest the
// registry reports for the tag afterwards.
func (r *Registry) Copy(t testing.TB, src, repo, tag, creds string) string {
	t.Helper()
	_, skopeo := RequireRegistryTools(t)
	dest := "docker://" + r.Host + "/" + repo + ":" + tag
	args := []string{"copy", "--quiet", "--dest-tls-verify=false"}
	if creds != "" {
		args = append(args, "--dest-creds", creds)
	}
	args = append(args, src, dest)
	if out, err := exec.Command(skopeo, args...).CombinedOutput(); err != nil {
		t.Fatalf("skopeo copy %s to %s: %v\n%s", src, dest, err, out)
	}
	return r.Digest(t, repo, tag, creds)
}

// Digest returns the registry's manifest digest of repo:tag (skopeo
// inspect, independent of the code under test).
func (r *Registry) Digest(t testing.TB, repo, tag, creds string) string {
	t.Helper()
	_, skopeo := RequireRegistryTools(t)
	ref := "docker://" + r.Host + "/" + repo + ":" + tag
	args := []string{"inspect", "--tls-verify=false", "--format", "{{.Digest}}"}
	if creds != "" {
		args = append(args, "--creds", creds)
	}
	out, err := exec.Command(skopeo, append(args, ref)...).CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo inspect %s: %v\n%s", ref, err, out)
	}
	return strings.TrimSpace(string(out))
}

// WriteOCILayout writes img as an OCI image layout in dir with one tag.
func WriteOCILayout(dir, tag string, img TestImage) error {
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return err
	}
	put := func(b []byte) (string, int, error) {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		return "sha256:" + h, len(b), os.WriteFile(filepath.Join(blobs, h), b, 0o644)
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	names := make([]string, 0, len(img.Files))
	for n := range img.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		body := img.Files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	diff := sha256.Sum256(raw.Bytes())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	layerDigest, layerSize, err := put(gz.Bytes())
	if err != nil {
		return err
	}
	config, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "config": map[string]any{"Cmd": img.Cmd},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diff[:])}}})
	cfgDigest, cfgSize, err := put(config)
	if err != nil {
		return err
	}
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfgDigest, "size": cfgSize},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layerDigest, "size": layerSize}}})
	mDigest, mSize, err := put(manifest)
	if err != nil {
		return err
	}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{map[string]any{
		"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mDigest, "size": mSize,
		"annotations": map[string]string{"org.opencontainers.image.ref.name": tag}}}})
	if err := os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}
