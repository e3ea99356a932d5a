package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/version"
)

// Path is the only endpoint of the MCP listener (spec).
const Path = "/mcp"

// Authenticator is what the listener needs from the identity service.
type Authenticator interface {
	// AuthenticateMCP accepts only an active API key of scope mcp.
	AuthenticateMCP(ctx context.Context, key string) (*domain.Principal, error)
	// AllowAPIKey counts one request of the key in its rate window.
	AllowAPIKey(ctx context.Context, key string) (bool, time.Duration, error)
	// ClientAddr and Allowed apply the IP allowlist as on the REST API.
	ClientAddr(ctx context.Context, remoteAddr string, xff []string) netip.Addr
	Allowed(ctx context.Context, ip netip.Addr) bool
}

// principalKey carries the authenticated principal from the HTTP check to
// the SDK's token verifier.
type principalKey struct{}

// NewHandler serves /mcp: Streamable HTTP (JSON responses) of a read-only
// MCP server, behind the allowlist, the API-key rate limit and the mcp-key
// check. Requests are stateless, so every call is authenticated on its own
// and a revoked key stops working at once.
func NewHandler(svc *Service, authn Authenticator, log *slog.Logger) http.Handler {
	srv := newServer(svc, log)
	stream := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: 1 << 20})
	// The SDK's bearer middleware puts the token info where tool handlers
	// read it (req.Extra.TokenInfo); the principal was checked just before.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p, ok := r.Context().Value(principalKey{}).(*domain.Principal)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p.UserID, Scopes: []string{domain.ScopeMCP},
			Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"principal": p}}, nil
	}
	inner := auth.RequireBearerToken(verify, nil)(stream)
	mux := http.NewServeMux()
	mux.Handle(Path, guard(authn, inner))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "the MCP listener serves only "+Path)
	})
	return recoverer(log, mux)
}

// guard applies, in the REST API's order: client address and allowlist,
// the API-key rate limit (before validation), then the mcp key itself.
func guard(authn Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		ip := authn.ClientAddr(ctx, r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		if !authn.Allowed(ctx, ip) {
			writeError(w, http.StatusForbidden, "ip_not_allowed", "this client address is not on the allowlist")
			return
		}
		key, ok := bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lcm-mcp"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", "send an API key of scope mcp as Authorization: Bearer <key>")
			return
		}
		allowed, retry, err := authn.AllowAPIKey(ctx, key)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "unavailable", "the rate limiter is unavailable; try again")
			return
		}
		if !allowed {
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
			writeError(w, http.StatusTooManyRequests, "rate_limited", "too many requests for this API key; wait for the next minute")
			return
		}
		p, err := authn.AuthenticateMCP(ctx, key)
		if err != nil {
			var de *domain.Error
			if errors.As(err, &de) && errors.Is(de.Kind, domain.ErrUnauthenticated) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="lcm-mcp", error="invalid_token"`)
				writeError(w, http.StatusUnauthorized, "invalid_api_key", "only an active API key of scope mcp works here")
				return
			}
			writeError(w, http.StatusServiceUnavailable, "unavailable", "cannot check the key right now; try again")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, principalKey{}, p)))
	})
}

func bearer(r *http.Request) (string, bool) {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") || f[1] == "" {
		return "", false
	}
	return f[1], true
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": errCode})
}

// recoverer turns a panic in a request into a 500, logged and counted
// (health monitor); the listener keeps serving.
func recoverer(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				safe.Report("MCP listener", v, "path", r.URL.Path)
				writeError(w, http.StatusInternalServerError, "internal", "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func principalOf(extra *sdk.RequestExtra) (*domain.Principal, error) {
	if extra != nil && extra.TokenInfo != nil {
		if p, ok := extra.TokenInfo.Extra["principal"].(*domain.Principal); ok {
			return p, nil
		}
	}
	return nil, errors.New("not authenticated")
}

// toolError turns a service error into a tool error (isError, a plain
// sentence); internal errors are not detailed.
func toolError(err error) error {
	var de *domain.Error
	if errors.As(err, &de) {
		return fmt.Errorf("%s (%s)", de.Message, de.Code)
	}
	return errors.New("internal error; see the server log")
}

// ServerRef names one server.
type ServerRef struct {
	ID   string `json:"id,omitempty" jsonschema:"the server's id"`
	Name string `json:"name,omitempty" jsonschema:"the server's name (exact, case-insensitive); used when id is empty"`
}

type empty struct{}

func readOnly() *sdk.ToolAnnotations {
	f := false
	return &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f}
}

// newServer declares the tools and the server resource template.
func newServer(svc *Service, log *slog.Logger) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "lcm", Title: "LCM fleet (read-only)", Version: version.Get().Version},
		&sdk.ServerOptions{
			Instructions: "Read-only view of the Linux servers LCM manages, limited to the servers the API key's creator may see. " +
				"No tool changes anything.",
			// The SDK logs every session at INFO; only its problems matter here.
			Logger: slog.New(warnOnly{log.Handler()}),
		})
	// The SDK runs each request's handler in a goroutine of its own that
	// recovers nothing: recoverMethods does.
	s.AddReceivingMiddleware(recoverMethods)
	addTool(s, &sdk.Tool{Name: "list_servers", Title: "List servers", Annotations: readOnly(),
		Description: "Lists managed servers with their state (traffic light, updates, reboot, vulnerabilities, hardware), " +
			"filtered by status, group, search text, outdated or critical-CVE only; paged (limit, offset, next_offset)."},
		svc.ListServers)
	addTool(s, &sdk.Tool{Name: "get_server", Title: "Get a server", Annotations: readOnly(),
		Description: "Returns one server's curated record by id or name."},
		func(ctx context.Context, p *domain.Principal, in ServerRef) (ServerView, error) {
			return svc.GetServer(ctx, p, in.ID, in.Name)
		})
	addTool(s, &sdk.Tool{Name: "fleet_summary", Title: "Fleet summary", Annotations: readOnly(),
		Description: "Counts the visible fleet: total, reachable, unreachable, by status, servers with updates, " +
			"with security updates, needing a reboot, with critical vulnerabilities."},
		func(ctx context.Context, p *domain.Principal, _ empty) (Summary, error) {
			return svc.FleetSummary(ctx, p)
		})
	addTool(s, &sdk.Tool{Name: "list_vulnerabilities", Title: "List vulnerabilities", Annotations: readOnly(),
		Description: "Lists vulnerability findings of the visible servers (package, installed and fixed version, " +
			"advisory id, severity), filtered by server, severity, package, CVE id, fix available; paged."},
		svc.ListVulnerabilities)
	addTool(s, &sdk.Tool{Name: "list_outdated_packages", Title: "List outdated packages", Annotations: readOnly(),
		Description: "Lists pending package updates per server (installed and candidate version, security flag, held), " +
			"for one server or every visible server with updates; paged by server."},
		svc.ListOutdatedPackages)
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "server", Title: "Server", URITemplate: "lcm://servers/{id}",
		MIMEType: "application/json", Description: "One server's curated record (the get_server output)."},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			p, err := principalOf(req.Extra)
			if err != nil {
				return nil, err
			}
			uri := req.Params.URI
			id, ok := strings.CutPrefix(uri, "lcm://servers/")
			if !ok || id == "" || strings.Contains(id, "/") {
				return nil, sdk.ResourceNotFoundError(uri)
			}
			v, err := svc.GetServer(ctx, p, id, "")
			if err != nil {
				return nil, sdk.ResourceNotFoundError(uri)
			}
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return nil, err
			}
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
		})
	return s
}

// warnOnly passes on records at WARN and above.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

// addTool registers a read-only tool with input and output schemas
// inferred from In and Out. Unlike the SDK's generic AddTool it encodes the
// output once and does not re-validate it against its own schema (a page of
// 200 servers would be encoded, decoded and walked again per call); the
// input is validated against its schema before the handler runs.
func addTool[In, Out any](s *sdk.Server, t *sdk.Tool, h func(context.Context, *domain.Principal, In) (Out, error)) {
	inSchema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema of %s: %v", t.Name, err))
	}
	outSchema, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: output schema of %s: %v", t.Name, err))
	}
	inResolved, err := inSchema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: input schema of %s: %v", t.Name, err))
	}
	t.InputSchema, t.OutputSchema = inSchema, outSchema
	s.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p, err := principalOf(req.Extra)
		if err != nil {
			return nil, err
		}
		raw := req.Params.Arguments
		if len(raw) == 0 || string(raw) == "null" {
			raw = json.RawMessage("{}")
		}
		var generic map[string]any
		if err := json.Unmarshal(raw, &generic); err != nil {
			return toolErrorResult("the arguments must be a JSON object (invalid_arguments)"), nil
		}
		if err := inResolved.Validate(generic); err != nil {
			return toolErrorResult("invalid arguments: " + err.Error() + " (invalid_arguments)"), nil
		}
		var in In
		if err := json.Unmarshal(raw, &in); err != nil {
			return toolErrorResult("invalid arguments: " + err.Error() + " (invalid_arguments)"), nil
		}
		out, err := h(ctx, p, in)
		if err != nil {
			return toolErrorResult(toolError(err).Error()), nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{StructuredContent: json.RawMessage(b), Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
	})
}

func toolErrorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// recoverMethods recovers a panic of any MCP method handler (a tool call
// among them): logged and counted, answered as an internal error.
func recoverMethods(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (res sdk.Result, err error) {
		defer func() {
			if v := recover(); v != nil {
				safe.Report("MCP method "+method, v)
				res, err = nil, errors.New("internal error (logged)")
			}
		}()
		return next(ctx, method, req)
	}
}
