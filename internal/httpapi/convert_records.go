package httpapi

import (
	"time"

	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/recordsvc"
	"github.com/lcmproject/lcm/internal/store"
)

// Wire types of the records area (camelCase, as spec part 2 writes them).

type projectDTO struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

type memberDTO struct {
	ProjectID string    `json:"projectId"`
	UserID    string    `json:"userId"`
	Username  string    `json:"username"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
}

type zoneDTO struct {
	ID         string    `json:"id"`
	ProjectID  string    `json:"projectId"`
	Name       string    `json:"name"`
	DefaultTTL int64     `json:"defaultTtl"`
	MName      string    `json:"mname"`
	RName      string    `json:"rname"`
	Refresh    uint32    `json:"refresh"`
	Retry      uint32    `json:"retry"`
	Expire     uint32    `json:"expire"`
	Minimum    uint32    `json:"minimum"`
	Serial     uint32    `json:"serial"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// setDTO is a record set as spec part 2 defines it; it is also the input.
type setDTO struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     *int64   `json:"ttl,omitempty"`
	Records []string `json:"records"`
}

// zoneSetDTO is a set stored in a zone, with where it comes from.
type zoneSetDTO struct {
	ID        string    `json:"id"`
	ZoneID    string    `json:"zoneId"`
	Name      string    `json:"name"`
	Type      string    `json:"type"`
	TTL       *int64    `json:"ttl,omitempty"`
	Records   []string  `json:"records"`
	Origin    string    `json:"origin"`
	OriginID  string    `json:"originId,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
}

type templateDTO struct {
	ID        string    `json:"id"`
	ProjectID string    `json:"projectId"`
	Name      string    `json:"name"`
	Sets      []setDTO  `json:"sets"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

type syncGroupDTO struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Priority  int       `json:"priority"`
	OwnerID   string    `json:"ownerId"`
	Sets      []setDTO  `json:"sets"`
	ZoneIDs   []string  `json:"zoneIds"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

type sourceHostDTO struct {
	ID        string    `json:"id"`
	ProjectID string    `json:"projectId"`
	Name      string    `json:"name"`
	IPv4      []string  `json:"ipv4"`
	IPv6      []string  `json:"ipv6"`
	UpdatedAt time.Time `json:"updatedAt"`
}

type reportDTO struct {
	ZoneID          string   `json:"zoneId"`
	Applied         []string `json:"applied"`
	SkippedPriority []string `json:"skippedPriority"`
	Conflicts       []string `json:"conflicts"`
}

func toProjectDTO(p store.Project) projectDTO {
	return projectDTO{ID: p.ID, Name: p.Name, Description: p.Description, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func toMemberDTO(m store.ProjectMember) memberDTO {
	return memberDTO{ProjectID: m.ProjectID, UserID: m.UserID, Username: m.Username, Role: m.Role, CreatedAt: m.CreatedAt}
}

func toZoneDTO(z store.DNSZone) zoneDTO {
	return zoneDTO{ID: z.ID, ProjectID: z.ProjectID, Name: z.Name, DefaultTTL: z.DefaultTTL, MName: z.MName, RName: z.RName,
		Refresh: z.Refresh, Retry: z.Retry, Expire: z.Expire, Minimum: z.Minimum, Serial: z.Serial,
		CreatedAt: z.CreatedAt, UpdatedAt: z.UpdatedAt}
}

func toZoneSetDTO(r store.ZoneRecordSet) zoneSetDTO {
	return zoneSetDTO{ID: r.ID, ZoneID: r.ZoneID, Name: r.Name, Type: r.Type, TTL: r.TTL, Records: recStrings(r.Records),
		Origin: r.OriginKind, OriginID: r.OriginID, UpdatedAt: r.UpdatedAt}
}

func toSetDTOs(specs []store.SetSpec) []setDTO {
	out := make([]setDTO, len(specs))
	for i, s := range specs {
		out[i] = setDTO{Name: s.Name, Type: s.Type, TTL: s.TTL, Records: recStrings(s.Records)}
	}
	return out
}

func fromSetDTOs(in []setDTO) []records.RecordSet {
	if in == nil {
		return nil
	}
	out := make([]records.RecordSet, len(in))
	for i, s := range in {
		out[i] = fromSetDTO(s)
	}
	return out
}

func fromSetDTO(s setDTO) records.RecordSet {
	return records.RecordSet{Name: s.Name, Type: s.Type, TTL: s.TTL, Records: s.Records}
}

func toTemplateDTO(t store.RecordTemplate) templateDTO {
	return templateDTO{ID: t.ID, ProjectID: t.ProjectID, Name: t.Name, Sets: toSetDTOs(t.Sets), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func toSyncGroupDTO(g recordsvc.SyncGroupView) syncGroupDTO {
	return syncGroupDTO{ID: g.ID, Name: g.Name, Priority: g.Priority, OwnerID: g.OwnerID, Sets: toSetDTOs(g.Sets),
		ZoneIDs: recStrings(g.ZoneIDs), CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt}
}

func toSourceHostDTO(h store.SourceHost) sourceHostDTO {
	return sourceHostDTO{ID: h.ID, ProjectID: h.ProjectID, Name: h.Name, IPv4: recStrings(h.IPv4), IPv6: recStrings(h.IPv6), UpdatedAt: h.UpdatedAt}
}

func toReportDTO(r records.Report) reportDTO {
	return reportDTO{ZoneID: r.ZoneID, Applied: recStrings(r.Applied), SkippedPriority: recStrings(r.SkippedPriority), Conflicts: recStrings(r.Conflicts)}
}

// recList converts a slice with fn; never nil, so JSON shows [].
func recList[T, U any](in []T, fn func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = fn(v)
	}
	return out
}

func recStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
