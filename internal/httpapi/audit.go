package httpapi

import (
	"net/http"
	"reflect"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/store"
)

// Every write route (any method but GET/HEAD/OPTIONS) leaves an entry in
// the audit log (docs/audit.md). handle() puts auditWrite in front of the
// route's access check:
//
//   - the handler notes its specific entry with s.note after the service
//     call (action and target such as job.submit server:<id> with the job
//     id); auditWrite appends it only when the response is a success
//     (status < 400), so a refused or failed write leaves no success entry;
//   - services with their own security events (the auth service: sign-ins,
//     users, API keys, security settings; the schedules) append directly,
//     also for failures, through audit.Append, which counts them for the
//     request;
//   - safety net: a successful write that recorded nothing gets a generic
//     api.write entry with method and route;
//   - a write refused with 403 to a signed-in caller that recorded nothing
//     gets access.denied (method, route, error code): an attempt beyond the
//     caller's rights is security relevant. Other 4xx (validation, not
//     found, conflicts) leave nothing.
//
// auditExempt lists the write routes that change nothing and therefore
// record nothing at all; the audit coverage test shares the list.
var auditExempt = map[string]string{
	"POST /v1/speech/stt":                     "transcribes the uploaded audio and returns text; nothing is stored or changed",
	"POST /api/v1/privilege-profiles/preview": "renders an unsaved profile's sudoers file; nothing is stored or changed",
	"POST /api/v1/profile-blocks/:id/preview": "renders a block's sudoers lines for a family; nothing is stored or changed",
	"POST /api/v1/system/self-update":         "always refused (409 self_update_unsupported): LCM installs no updates itself; nothing is changed",
}

// Audit actions the HTTP layer itself records.
const (
	actionFallback = "api.write"
	actionDenied   = "access.denied"
)

func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// auditWrite opens the request's audit scope and commits it (see above).
func (s *Server) auditWrite(method, path string) gin.HandlerFunc {
	route := method + " " + path
	_, exempt := auditExempt[route]
	return func(c *gin.Context) {
		sc := &audit.Scope{Actor: principal(c)}
		if ip := clientIP(c); ip.IsValid() {
			sc.IP = ip.String()
		}
		c.Request = c.Request.WithContext(audit.WithScope(c.Request.Context(), sc))
		c.Next()
		if s.deps.Store == nil {
			return
		}
		ctx := c.Request.Context()
		status := c.Writer.Status()
		noted := sc.Take()
		if status < http.StatusBadRequest {
			for _, ev := range noted {
				audit.Append(ctx, s.deps.Store, s.deps.Log, principal(c), store.AuditEntry{Action: ev.Action, Target: ev.Target, Details: ev.Details})
			}
		}
		switch {
		case sc.Recorded() > 0 || exempt:
		case status < http.StatusBadRequest:
			audit.Append(ctx, s.deps.Store, s.deps.Log, principal(c), store.AuditEntry{Action: actionFallback, Target: "route:" + route,
				Details: map[string]any{"method": method, "path": c.Request.URL.Path, "status": status}})
		case status == http.StatusForbidden && principal(c) != nil:
			audit.Append(ctx, s.deps.Store, s.deps.Log, principal(c), store.AuditEntry{Action: actionDenied, Target: "route:" + route,
				Details: map[string]any{"method": method, "path": c.Request.URL.Path, "code": c.GetString(ctxErrCode)}})
		}
	}
}

// note records the audit entry of the current write; it is written when
// the response is a success (auditWrite). Call it after the service call,
// also when it failed: the entry is then dropped.
func (s *Server) note(c *gin.Context, action, target string, details map[string]any) {
	if sc := audit.ScopeOf(c.Request.Context()); sc != nil {
		sc.Note(action, target, details)
	}
}

// changedFields keeps the members of a patch that were sent (non-nil
// pointers), dereferenced, for an audit entry's details.
func changedFields(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		rv := reflect.ValueOf(v)
		if !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
			continue
		}
		if rv.Kind() == reflect.Pointer {
			v = rv.Elem().Interface()
		}
		out[k] = v
	}
	return out
}
