// Package portal is the service of portal messages (announcements): the
// banners administrators publish in the user shell. It validates input,
// assigns ids and timestamps, and decides which messages are visible at a
// moment. docs/portal.md describes the fields and rules.
package portal

import (
	"context"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Severities of a portal message, mildest first. The UI colours the banner
// by it (info: neutral, warning: amber, critical: red).
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Severities lists the accepted severities, mildest first.
var Severities = []string{SeverityInfo, SeverityWarning, SeverityCritical}

// Input limits. The title is one banner line; the body is read in a dialog,
// 10,000 characters is several screens of text.
const (
	MaxTitleLen = 200
	MaxBodyLen  = 10000
)

// Error codes of validation errors.
const (
	CodeInvalidTitle    = "invalid_title"
	CodeInvalidBody     = "invalid_body"
	CodeInvalidSeverity = "invalid_severity"
	CodeInvalidWindow   = "invalid_window"
	CodeInvalidID       = "invalid_id"
)

// Input is the writable part of a portal message (create and update take
// the same body). Nil StartsAt/EndsAt mean unbounded; an empty Severity
// means info.
type Input struct {
	Title    string
	Body     string
	Severity string
	Active   bool
	StartsAt *time.Time
	EndsAt   *time.Time
}

// Service manages portal messages.
type Service struct {
	st  *store.Store
	now func() time.Time
}

// New returns a service over st.
func New(st *store.Store) *Service {
	return &Service{st: st, now: func() time.Time { return time.Now().UTC() }}
}

// WithClock returns a copy of the service that reads time from now (tests).
func (s *Service) WithClock(now func() time.Time) *Service {
	c := *s
	c.now = now
	return &c
}

// Create validates and stores a new portal message.
func (s *Service) Create(ctx context.Context, in Input) (store.Announcement, error) {
	in, err := validate(in)
	if err != nil {
		return store.Announcement{}, err
	}
	now := s.now().Truncate(time.Microsecond) // PostgreSQL keeps microseconds
	a := fromInput(uuid.NewString(), in)
	a.CreatedAt, a.UpdatedAt = now, now
	if err := s.st.CreateAnnouncement(ctx, a); err != nil {
		return store.Announcement{}, err
	}
	return a, nil
}

// Update replaces the fields of a portal message.
func (s *Service) Update(ctx context.Context, id string, in Input) (store.Announcement, error) {
	if err := checkID(id); err != nil {
		return store.Announcement{}, err
	}
	in, err := validate(in)
	if err != nil {
		return store.Announcement{}, err
	}
	var out store.Announcement
	err = s.st.InTx(ctx, func(tx *store.Store) error {
		cur, err := tx.GetAnnouncement(ctx, id)
		if err != nil {
			return err
		}
		a := fromInput(id, in)
		a.CreatedAt, a.UpdatedAt = cur.CreatedAt, s.now().Truncate(time.Microsecond)
		if err := tx.UpdateAnnouncement(ctx, a); err != nil {
			return err
		}
		out = a
		return nil
	})
	return out, err
}

// Get returns one portal message.
func (s *Service) Get(ctx context.Context, id string) (store.Announcement, error) {
	if err := checkID(id); err != nil {
		return store.Announcement{}, err
	}
	return s.st.GetAnnouncement(ctx, id)
}

// List returns every portal message, newest first.
func (s *Service) List(ctx context.Context) ([]store.Announcement, error) {
	return s.st.ListAnnouncements(ctx)
}

// Delete removes a portal message.
func (s *Service) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	return s.st.DeleteAnnouncement(ctx, id)
}

// Visible returns the messages to show now: active, and now within
// [startsAt, endsAt) where a missing bound is open. The most severe come
// first, newest first within a severity.
func (s *Service) Visible(ctx context.Context) ([]store.Announcement, error) {
	list, err := s.st.VisibleAnnouncements(ctx, s.now())
	if err != nil {
		return nil, err
	}
	sort.SliceStable(list, func(i, j int) bool { return rank(list[i].Severity) > rank(list[j].Severity) })
	return list, nil
}

func rank(severity string) int {
	for i, s := range Severities {
		if s == severity {
			return i
		}
	}
	return -1
}

func fromInput(id string, in Input) store.Announcement {
	return store.Announcement{ID: id, Title: in.Title, Body: in.Body, Severity: in.Severity, Active: in.Active,
		StartsAt: in.StartsAt, EndsAt: in.EndsAt}
}

// checkID rejects ids that are not uuids (400) before any lookup, so a
// malformed id never reads as "not found".
func checkID(id string) error {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return domain.Invalid(CodeInvalidID, "announcement id must be a uuid")
	}
	return nil
}

// validate checks and normalises an input: the title is trimmed, an empty
// severity becomes info, times are UTC with microsecond precision (what
// PostgreSQL stores).
func validate(in Input) (Input, error) {
	in.Title = strings.TrimSpace(in.Title)
	switch n := utf8.RuneCountInString(in.Title); {
	case n == 0:
		return in, domain.Invalid(CodeInvalidTitle, "title is required")
	case n > MaxTitleLen:
		return in, domain.Invalid(CodeInvalidTitle, "title must be at most 200 characters")
	}
	if strings.ContainsFunc(in.Title, isControl) {
		return in, domain.Invalid(CodeInvalidTitle, "title must be one line without control characters")
	}
	if !utf8.ValidString(in.Title) || !utf8.ValidString(in.Body) {
		return in, domain.Invalid(CodeInvalidBody, "title and body must be valid UTF-8")
	}
	if utf8.RuneCountInString(in.Body) > MaxBodyLen {
		return in, domain.Invalid(CodeInvalidBody, "body must be at most 10000 characters")
	}
	if strings.ContainsRune(in.Body, 0) {
		return in, domain.Invalid(CodeInvalidBody, "body must not contain NUL characters")
	}
	if in.Severity == "" {
		in.Severity = SeverityInfo
	}
	if rank(in.Severity) < 0 {
		return in, domain.Invalid(CodeInvalidSeverity, "severity must be one of info, warning, critical")
	}
	in.StartsAt, in.EndsAt = normTime(in.StartsAt), normTime(in.EndsAt)
	if in.StartsAt != nil && in.EndsAt != nil && !in.EndsAt.After(*in.StartsAt) {
		return in, domain.Invalid(CodeInvalidWindow, "endsAt must be after startsAt")
	}
	return in, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func normTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Microsecond)
	return &u
}
