package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/portal"
	"github.com/lcmproject/lcm/internal/speech"
	"github.com/lcmproject/lcm/internal/speechsvc"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// areaEnv serves the portal and speech routes in-process over a real
// store. A test-only middleware signs the caller in by the X-Test-User
// header ("admin": announcements:manage and settings:manage; "user": signed
// in without permissions; absent: anonymous); the identity area's tokens
// and cookies are covered by the real-binary tests.
type areaEnv struct {
	t      *testing.T
	ts     *httptest.Server
	st     *store.Store
	portal *portal.Service
	speech *speechsvc.Service
}

func newAreaEnv(t *testing.T, db testutil.DB, now func() time.Time, opts ...speech.Option) *areaEnv {
	t.Helper()
	st := storetest.Open(t, db.URL)

	e := &areaEnv{t: t, st: st, portal: portal.New(st), speech: speechsvc.New(st, "en-US", opts...)}
	if now != nil {
		e.portal = e.portal.WithClock(now)
	}
	users := map[string]*domain.Principal{
		"admin": {UserID: uuid.NewString(), Username: "admin", Roles: []string{domain.RoleAdmin}, Method: domain.AuthJWT,
			Permissions: map[string]bool{domain.PermAnnouncementsManage: true, domain.PermSettingsManage: true}},
		"user": {UserID: uuid.NewString(), Username: "user", Method: domain.AuthJWT, Permissions: map[string]bool{}},
	}
	gin.SetMode(gin.ReleaseMode)
	s := &Server{deps: Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Services: Services{Portal: e.portal, Speech: e.speech}}, engine: gin.New()}
	s.engine.Use(s.recoverPanics(), func(c *gin.Context) {
		if p := users[c.GetHeader("X-Test-User")]; p != nil {
			c.Set(ctxPrincipal, p)
		}
		c.Next()
	})
	s.routesPortal()
	s.routesSpeech()
	e.ts = httptest.NewServer(s.engine)
	t.Cleanup(e.ts.Close)
	return e
}

// do sends a request as who; body is JSON-encoded unless it is a string or
// an io.Reader. It returns the status and the raw body.
func (e *areaEnv) do(method, path, who string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case io.Reader:
		rd = b
	default:
		raw, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	if who != "" {
		req.Header.Set("X-Test-User", who)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, raw
}

// errorOf asserts an {error} body with a non-empty message and returns its code.
func errorOf(t *testing.T, raw []byte) string {
	t.Helper()
	var b struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(raw, &b), "%s", raw)
	require.NotEmpty(t, b.Error, "%s", raw)
	return b.Code
}

type annJSON struct {
	ID        string  `json:"id"`
	Title     string  `json:"title"`
	Body      string  `json:"body"`
	Severity  string  `json:"severity"`
	Active    bool    `json:"active"`
	StartsAt  *string `json:"startsAt"`
	EndsAt    *string `json:"endsAt"`
	UpdatedAt string  `json:"updatedAt"`
}

func decodeAnn(t *testing.T, raw []byte) annJSON {
	t.Helper()
	var a annJSON
	require.NoError(t, json.Unmarshal(raw, &a), "%s", raw)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"id", "title", "body", "severity", "active", "startsAt", "endsAt", "updatedAt"} {
		assert.Contains(t, m, k)
	}
	assert.Len(t, m, 8, "exactly the spec's fields: %s", raw)
	return a
}

func TestAnnouncementsHTTP(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newAreaEnv(t, db, nil)
			const base = "/api/v1/admin/announcements"

			// Access: admin only; the visible list for every signed-in user.
			code, _ := e.do("GET", base, "", nil)
			assert.Equal(t, http.StatusUnauthorized, code)
			code, raw := e.do("POST", base+"/create", "user", map[string]any{"title": "x"})
			assert.Equal(t, http.StatusForbidden, code)
			errorOf(t, raw)
			code, _ = e.do("GET", "/api/v1/announcements/visible", "", nil)
			assert.Equal(t, http.StatusUnauthorized, code)

			code, raw = e.do("POST", base+"/create", "admin", map[string]any{"title": "Maintenance", "body": "Tonight 22:00",
				"severity": "warning", "active": true, "startsAt": "", "endsAt": nil})
			require.Equal(t, http.StatusCreated, code, "%s", raw)
			a := decodeAnn(t, raw)
			assert.Equal(t, "Maintenance", a.Title)
			assert.Equal(t, "warning", a.Severity)
			assert.Nil(t, a.StartsAt)
			assert.Nil(t, a.EndsAt)
			_, err := time.Parse(time.RFC3339Nano, a.UpdatedAt)
			require.NoError(t, err)

			code, raw = e.do("GET", base+"/"+a.ID, "admin", nil)
			require.Equal(t, http.StatusOK, code)
			assert.Equal(t, a, decodeAnn(t, raw))

			code, raw = e.do("POST", base+"/"+a.ID+"/update", "admin", map[string]any{"title": "Maintenance moved",
				"severity": "critical", "active": false, "startsAt": "2030-01-01T10:00:00+01:00", "endsAt": "2030-01-02T00:00:00Z"})
			require.Equal(t, http.StatusOK, code, "%s", raw)
			u := decodeAnn(t, raw)
			assert.Equal(t, a.ID, u.ID)
			assert.Equal(t, "", u.Body, "update replaces the whole message")
			assert.False(t, u.Active)
			require.NotNil(t, u.StartsAt)
			assert.Equal(t, "2030-01-01T09:00:00Z", *u.StartsAt)

			code, raw = e.do("GET", base, "admin", nil)
			require.Equal(t, http.StatusOK, code)
			var list []annJSON
			require.NoError(t, json.Unmarshal(raw, &list))
			require.Len(t, list, 1)
			assert.Equal(t, u, list[0])

			// Unknown id → 404 {error}; malformed id → 400 {error}.
			missing := uuid.NewString()
			for _, r := range []struct{ method, path string }{
				{"GET", base + "/" + missing}, {"POST", base + "/" + missing + "/update"}, {"POST", base + "/" + missing + "/delete"},
			} {
				code, raw = e.do(r.method, r.path, "admin", map[string]any{"title": "x"})
				assert.Equal(t, http.StatusNotFound, code, r.path)
				assert.Equal(t, "not_found", errorOf(t, raw))
				code, raw = e.do(r.method, strings.Replace(r.path, missing, "not-a-uuid", 1), "admin", map[string]any{"title": "x"})
				assert.Equal(t, http.StatusBadRequest, code, r.path)
				assert.Equal(t, portal.CodeInvalidID, errorOf(t, raw))
			}

			code, _ = e.do("POST", base+"/"+a.ID+"/delete", "admin", nil)
			assert.Equal(t, http.StatusNoContent, code)
			code, _ = e.do("GET", base+"/"+a.ID, "admin", nil)
			assert.Equal(t, http.StatusNotFound, code)
		})
	}
}

func TestAnnouncementValidationHTTP(t *testing.T) {
	e := newAreaEnv(t, testutil.DB{Name: "sqlite"}, nil)
	cases := []struct {
		name string
		body any
		code string
	}{
		{"no title", map[string]any{"body": "b"}, portal.CodeInvalidTitle},
		{"empty title", map[string]any{"title": ""}, portal.CodeInvalidTitle},
		{"blank title", map[string]any{"title": "   "}, portal.CodeInvalidTitle},
		{"long title", map[string]any{"title": strings.Repeat("t", 201)}, portal.CodeInvalidTitle},
		{"long body", map[string]any{"title": "t", "body": strings.Repeat("b", 10001)}, portal.CodeInvalidBody},
		{"unknown severity", map[string]any{"title": "t", "severity": "urgent"}, portal.CodeInvalidSeverity},
		{"bad startsAt", map[string]any{"title": "t", "startsAt": "tomorrow"}, portal.CodeInvalidWindow},
		{"date without time", map[string]any{"title": "t", "endsAt": "2030-01-01"}, portal.CodeInvalidWindow},
		{"endsAt before startsAt", map[string]any{"title": "t", "startsAt": "2030-01-02T00:00:00Z", "endsAt": "2030-01-01T00:00:00Z"}, portal.CodeInvalidWindow},
		{"endsAt equals startsAt", map[string]any{"title": "t", "startsAt": "2030-01-02T00:00:00Z", "endsAt": "2030-01-02T00:00:00Z"}, portal.CodeInvalidWindow},
		{"title wrong type", map[string]any{"title": 5}, "invalid_request"},
		{"active wrong type", map[string]any{"title": "t", "active": "yes"}, "invalid_request"},
		{"unknown field", map[string]any{"title": "t", "colour": "red"}, "invalid_request"},
		{"updatedAt is output only", map[string]any{"title": "t", "updatedAt": "2030-01-01T00:00:00Z"}, "invalid_request"},
		{"malformed JSON", `{"title":`, "invalid_request"},
		{"not an object", `[]`, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := e.do("POST", "/api/v1/admin/announcements/create", "admin", tc.body)
			assert.Equal(t, http.StatusBadRequest, code, "%s", raw)
			assert.Equal(t, tc.code, errorOf(t, raw))
		})
	}
	code, raw := e.do("GET", "/api/v1/admin/announcements", "admin", nil)
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `[]`, string(raw), "nothing was created")

	// Defaults: severity info, active true.
	code, raw = e.do("POST", "/api/v1/admin/announcements/create", "admin", map[string]any{"title": "t"})
	require.Equal(t, http.StatusCreated, code, "%s", raw)
	a := decodeAnn(t, raw)
	assert.Equal(t, "info", a.Severity)
	assert.True(t, a.Active)
}

func TestVisibleAnnouncementsHTTP(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			now := time.Now().UTC()
			e := newAreaEnv(t, db, func() time.Time { return now })
			ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
			create := func(title string, body map[string]any) {
				body["title"] = title
				now = now.Add(time.Millisecond) // distinct creation times
				code, raw := e.do("POST", "/api/v1/admin/announcements/create", "admin", body)
				require.Equal(t, http.StatusCreated, code, "%s", raw)
			}
			create("open both ends", map[string]any{})
			create("inactive", map[string]any{"active": false})
			create("started", map[string]any{"startsAt": ts(-time.Hour), "severity": "warning"})
			create("future", map[string]any{"startsAt": ts(time.Hour)})
			create("ends later", map[string]any{"endsAt": ts(time.Hour), "severity": "critical"})
			create("ended", map[string]any{"endsAt": ts(-time.Second)})
			create("inside window", map[string]any{"startsAt": ts(-time.Hour), "endsAt": ts(time.Hour)})
			create("past window", map[string]any{"startsAt": ts(-2 * time.Hour), "endsAt": ts(-time.Hour)})
			create("inactive in window", map[string]any{"active": false, "startsAt": ts(-time.Hour), "endsAt": ts(time.Hour)})

			visible := func() []string {
				code, raw := e.do("GET", "/api/v1/announcements/visible", "user", nil)
				require.Equal(t, http.StatusOK, code, "%s", raw)
				var list []annJSON
				require.NoError(t, json.Unmarshal(raw, &list))
				var titles []string
				for _, a := range list {
					titles = append(titles, a.Title)
				}
				return titles
			}
			assert.Equal(t, []string{"ends later", "started", "inside window", "open both ends"}, visible())

			// Two hours later: "future" has started, "ends later" and
			// "inside window" have ended.
			now = now.Add(2 * time.Hour)
			assert.Equal(t, []string{"started", "future", "open both ends"}, visible())
		})
	}
}
