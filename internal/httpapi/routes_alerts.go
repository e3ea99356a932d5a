package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/alerts"
	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// routesAlerts is issue 17: notification channels, alert rules, the alert
// history, the evaluation on demand and the system mail channel.
func (s *Server) routesAlerts() {
	s.handle(http.MethodGet, "/api/v1/notification-channels", Need(domain.PermNotificationsManage), s.listChannels)
	s.handle(http.MethodPost, "/api/v1/notification-channels", Need(domain.PermNotificationsManage), s.createChannel)
	s.handle(http.MethodPatch, "/api/v1/notification-channels/:id", Need(domain.PermNotificationsManage), s.updateChannel)
	s.handle(http.MethodDelete, "/api/v1/notification-channels/:id", Need(domain.PermNotificationsManage), s.deleteChannel)
	s.handle(http.MethodPost, "/api/v1/notification-channels/:id/test", Need(domain.PermNotificationsManage), s.testChannel)
	s.handle(http.MethodGet, "/api/v1/alert-rules", Need(domain.PermAlertsManage), s.listAlertRules)
	s.handle(http.MethodPost, "/api/v1/alert-rules", Need(domain.PermAlertsManage), s.createAlertRule)
	s.handle(http.MethodPatch, "/api/v1/alert-rules/:id", Need(domain.PermAlertsManage), s.updateAlertRule)
	s.handle(http.MethodDelete, "/api/v1/alert-rules/:id", Need(domain.PermAlertsManage), s.deleteAlertRule)
	s.handle(http.MethodGet, "/api/v1/alert-events", Need(domain.PermAlertsManage), s.listAlertEvents)
	s.handle(http.MethodPost, "/api/v1/alerts/evaluate", Need(domain.PermAlertsManage), s.evaluateAlerts)
	s.handle(http.MethodGet, "/api/v1/settings/mail-channel", Need(domain.PermSettingsManage), s.getMailChannel)
	s.handle(http.MethodPut, "/api/v1/settings/mail-channel", Need(domain.PermSettingsManage), s.putMailChannel)
	s.handle(http.MethodPost, "/api/v1/settings/global/test-mail", Need(domain.PermSettingsManage), s.testSystemMail)
}

// channelRequest is the body of POST and PATCH /notification-channels and
// PUT /settings/mail-channel. Absent fields keep the stored value; a
// secret set to "" removes it. Secrets are write-only.
type channelRequest struct {
	Name          *string   `json:"name"`
	Type          *string   `json:"type"`
	Enabled       *bool     `json:"enabled"`
	Host          *string   `json:"host"`
	Port          *int      `json:"port"`
	TLS           *string   `json:"tls"`
	Username      *string   `json:"username"`
	From          *string   `json:"from"`
	To            *[]string `json:"to"`
	Format        *string   `json:"format"`
	CAPEM         *string   `json:"caPem"`
	Topic         *string   `json:"topic"`
	Password      *string   `json:"password"`
	URL           *string   `json:"url"`
	Token         *string   `json:"token"`
	SigningSecret *string   `json:"signingSecret"`
}

func (r channelRequest) input() alerts.ChannelInput {
	return alerts.ChannelInput{Name: r.Name, Type: r.Type, Enabled: r.Enabled, Host: r.Host, Port: r.Port, TLS: r.TLS,
		Username: r.Username, From: r.From, To: r.To, Format: r.Format, CAPEM: r.CAPEM, Topic: r.Topic,
		Password: r.Password, URL: r.URL, Token: r.Token, SigningSecret: r.SigningSecret}
}

// auditDetails names what changed; secrets appear only as set/removed.
func (r channelRequest) auditDetails() map[string]any {
	d := changedFields(map[string]any{"name": r.Name, "type": r.Type, "enabled": r.Enabled, "host": r.Host, "port": r.Port,
		"tls": r.TLS, "username": r.Username, "from": r.From, "to": r.To, "format": r.Format, "topic": r.Topic})
	if r.CAPEM != nil {
		d["ca"] = map[bool]string{true: "removed", false: "set"}[*r.CAPEM == ""]
	}
	for k, v := range map[string]*string{"password": r.Password, "url": r.URL, "token": r.Token, "signing_secret": r.SigningSecret} {
		if v != nil {
			d[k] = map[bool]string{true: "removed", false: "set"}[*v == ""]
		}
	}
	return d
}

func (s *Server) listChannels(c *gin.Context) {
	list, err := s.deps.Services.Alerts.ListChannels(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"channels": list})
}

func (s *Server) createChannel(c *gin.Context) {
	var req channelRequest
	if !bindJSON(c, &req) {
		return
	}
	ch, err := s.deps.Services.Alerts.CreateChannel(c.Request.Context(), req.input())
	s.note(c, "notification_channel.create", audit.Target("notification_channel", ch.ID), req.auditDetails())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, ch)
}

func (s *Server) updateChannel(c *gin.Context) {
	var req channelRequest
	if !bindJSON(c, &req) {
		return
	}
	ch, err := s.deps.Services.Alerts.UpdateChannel(c.Request.Context(), c.Param("id"), req.input())
	s.note(c, "notification_channel.update", audit.Target("notification_channel", c.Param("id")), req.auditDetails())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, ch)
}

func (s *Server) deleteChannel(c *gin.Context) {
	err := s.deps.Services.Alerts.DeleteChannel(c.Request.Context(), c.Param("id"))
	s.note(c, "notification_channel.delete", audit.Target("notification_channel", c.Param("id")), nil)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) testChannel(c *gin.Context) {
	res, err := s.deps.Services.Alerts.TestChannel(c.Request.Context(), c.Param("id"), principal(c).Username)
	s.note(c, "notification_channel.test", audit.Target("notification_channel", c.Param("id")), map[string]any{"ok": res.OK})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

// ruleRequest is the body of POST and PATCH /alert-rules; absent fields
// keep the stored value.
type ruleRequest struct {
	Name            *string        `json:"name"`
	Type            *string        `json:"type"`
	Enabled         *bool          `json:"enabled"`
	Severity        *string        `json:"severity"`
	AllServers      *bool          `json:"allServers"`
	GroupIDs        *[]string      `json:"groupIds"`
	ChannelIDs      *[]string      `json:"channelIds"`
	Params          *alerts.Params `json:"params"`
	CooldownMinutes *int           `json:"cooldownMinutes"`
}

func (r ruleRequest) input() alerts.RuleInput {
	return alerts.RuleInput{Name: r.Name, Type: r.Type, Enabled: r.Enabled, Severity: r.Severity, AllServers: r.AllServers,
		GroupIDs: r.GroupIDs, ChannelIDs: r.ChannelIDs, Params: r.Params, CooldownMinutes: r.CooldownMinutes}
}

func (r ruleRequest) auditDetails() map[string]any {
	return changedFields(map[string]any{"name": r.Name, "type": r.Type, "enabled": r.Enabled, "severity": r.Severity,
		"all_servers": r.AllServers, "group_ids": r.GroupIDs, "channel_ids": r.ChannelIDs, "params": r.Params, "cooldown_minutes": r.CooldownMinutes})
}

func (s *Server) listAlertRules(c *gin.Context) {
	list, err := s.deps.Services.Alerts.ListRules(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"rules": list, "types": alerts.Types})
}

func (s *Server) createAlertRule(c *gin.Context) {
	var req ruleRequest
	if !bindJSON(c, &req) {
		return
	}
	r, err := s.deps.Services.Alerts.CreateRule(c.Request.Context(), principal(c), req.input())
	s.note(c, "alert_rule.create", audit.Target("alert_rule", r.ID), req.auditDetails())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, r)
}

func (s *Server) updateAlertRule(c *gin.Context) {
	var req ruleRequest
	if !bindJSON(c, &req) {
		return
	}
	r, err := s.deps.Services.Alerts.UpdateRule(c.Request.Context(), principal(c), c.Param("id"), req.input())
	s.note(c, "alert_rule.update", audit.Target("alert_rule", c.Param("id")), req.auditDetails())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

func (s *Server) deleteAlertRule(c *gin.Context) {
	r, err := s.deps.Services.Alerts.DeleteRule(c.Request.Context(), principal(c), c.Param("id"))
	s.note(c, "alert_rule.delete", audit.Target("alert_rule", c.Param("id")), map[string]any{"name": r.Name})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// alertEventDTO is one entry of GET /alert-events.
type alertEventDTO struct {
	ID         string             `json:"id"`
	RuleID     string             `json:"ruleId"`
	RuleName   string             `json:"ruleName"`
	RuleType   string             `json:"ruleType"`
	ServerID   string             `json:"serverId"`
	ServerName string             `json:"serverName"`
	Kind       string             `json:"kind"`
	Severity   string             `json:"severity"`
	Message    string             `json:"message"`
	CreatedAt  time.Time          `json:"createdAt"`
	Deliveries []alertDeliveryDTO `json:"deliveries"`
}

type alertDeliveryDTO struct {
	ChannelID     string     `json:"channelId"`
	ChannelName   string     `json:"channelName"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	LastError     string     `json:"lastError"`
	Response      string     `json:"response"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
}

func toAlertEventDTO(e store.AlertEvent) alertEventDTO {
	d := alertEventDTO{ID: e.ID, RuleID: e.RuleID, RuleName: e.RuleName, RuleType: e.RuleType, ServerName: e.ServerName,
		Kind: e.Kind, Severity: e.Severity, Message: e.Message, CreatedAt: e.CreatedAt, Deliveries: []alertDeliveryDTO{}}
	if e.Subject != alerts.FleetSubject {
		d.ServerID = e.Subject
	}
	for _, x := range e.Deliveries {
		d.Deliveries = append(d.Deliveries, alertDeliveryDTO{ChannelID: x.ChannelID, ChannelName: x.ChannelName, Status: x.Status,
			Attempts: x.Attempts, LastError: x.LastError, Response: x.Response, NextAttemptAt: x.NextAttemptAt, UpdatedAt: x.UpdatedAt})
	}
	return d
}

var eventKinds = map[string]bool{"": true, store.AlertFiring: true, store.AlertRepeat: true, store.AlertResolved: true}
var deliveryStates = map[string]bool{"": true, store.DeliveryPending: true, store.DeliverySent: true, store.DeliveryRetrying: true, store.DeliveryGivenUp: true}
var severities = map[string]bool{"": true, alerts.SeverityInfo: true, alerts.SeverityWarning: true, alerts.SeverityCritical: true}

func (s *Server) listAlertEvents(c *gin.Context) {
	f := alerts.EventFilter{RuleID: c.Query("ruleId"), Subject: c.Query("serverId"), Kind: c.Query("kind"),
		Severity: c.Query("severity"), DeliveryStatus: c.Query("deliveryStatus")}
	switch {
	case !eventKinds[f.Kind]:
		writeError(c, http.StatusBadRequest, "invalid_kind", "kind must be firing, repeat or resolved")
		return
	case !deliveryStates[f.DeliveryStatus]:
		writeError(c, http.StatusBadRequest, "invalid_delivery_status", "deliveryStatus must be pending, sent, retrying or given_up")
		return
	case !severities[f.Severity]:
		writeError(c, http.StatusBadRequest, "invalid_severity", "severity must be info, warning or critical")
		return
	}
	for name, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := c.Query(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeError(c, http.StatusBadRequest, "invalid_"+name, name+" must be an RFC 3339 time")
				return
			}
			*dst = t
		}
	}
	for name, dst := range map[string]*int{"limit": &f.Limit, "offset": &f.Offset} {
		if v := c.Query(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 100000 {
				writeError(c, http.StatusBadRequest, "invalid_"+name, name+" must be a whole number from 0")
				return
			}
			*dst = n
		}
	}
	list, err := s.deps.Services.Alerts.Events(c.Request.Context(), principal(c), f)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]alertEventDTO, len(list))
	for i, e := range list {
		out[i] = toAlertEventDTO(e)
	}
	c.JSON(http.StatusOK, gin.H{"events": out})
}

func (s *Server) evaluateAlerts(c *gin.Context) {
	rep, err := s.deps.Services.Alerts.Evaluate(c.Request.Context())
	s.note(c, "alerts.evaluate", audit.Target("alerts", "evaluate"), map[string]any{"fired": rep.Fired, "resolved": rep.Resolved, "repeated": rep.Repeated})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, rep)
}

func (s *Server) getMailChannel(c *gin.Context) {
	ch, ok, err := s.deps.Services.Alerts.SystemMail(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"configured": ok, "channel": mailChannelOrNil(ch, ok)})
}

func mailChannelOrNil(ch alerts.Channel, ok bool) any {
	if !ok {
		return nil
	}
	return ch
}

func (s *Server) putMailChannel(c *gin.Context) {
	var req channelRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Type != nil || req.Name != nil || req.URL != nil || req.Token != nil || req.SigningSecret != nil || req.Format != nil || req.Topic != nil {
		writeError(c, http.StatusBadRequest, "invalid_field", "the system mail channel takes only SMTP settings")
		return
	}
	ch, err := s.deps.Services.Alerts.SaveSystemMail(c.Request.Context(), req.input())
	s.note(c, "settings.mail_channel_updated", audit.Target("settings", "mail-channel"), req.auditDetails())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"configured": true, "channel": ch})
}

type testMailRequest struct {
	To string `json:"to"`
}

func (s *Server) testSystemMail(c *gin.Context) {
	var req testMailRequest
	if !bindJSON(c, &req) {
		return
	}
	res, err := s.deps.Services.Alerts.TestSystemMail(c.Request.Context(), req.To, principal(c).Username)
	s.note(c, "settings.test_mail", audit.Target("settings", "mail-channel"), map[string]any{"to": req.To, "ok": res.OK})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}
