package containers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrFormat is returned for output that is not what the engine prints.
var ErrFormat = errors.New("containers: unexpected engine output")

// Compose labels: Compose v2, docker-compose v1 and podman-compose set them.
const (
	LabelProject     = "com.docker.compose.project"
	LabelService     = "com.docker.compose.service"
	LabelWorkingDir  = "com.docker.compose.project.working_dir"
	LabelConfigFiles = "com.docker.compose.project.config_files"
)

// maxOutput bounds one listing: 200 containers are ~100 kB of inspect
// per MB; 64 MB is far beyond any real host and keeps a hostile one small.
const maxOutput = 64 << 20

// decodeEntries reads either one JSON array (podman, and both engines'
// inspect) or JSON lines (docker's --format json) straight into T.
func decodeEntries[T any](b []byte) ([]T, error) {
	if len(b) > maxOutput {
		return nil, fmt.Errorf("%w: %d bytes", ErrFormat, len(b))
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	var out []T
	if b[0] == '[' {
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// jsonValues is decodeEntries into raw objects.
func jsonValues(b []byte) ([]json.RawMessage, error) {
	vals, err := decodeEntries[json.RawMessage](b)
	for _, v := range vals {
		if len(v) == 0 || v[0] != '{' {
			return nil, fmt.Errorf("%w: entry is not an object", ErrFormat)
		}
	}
	return vals, err
}

// psEntry is the union of docker's and podman's `ps --format json` shapes.
type psEntry struct {
	// docker: "ID", "Names" (string), "Labels" (k=v,…), "Ports" (string),
	// "CreatedAt" (text). podman: "Id", "Names" ([]), "Labels" ({}),
	// "Ports" ([{}]), "Created"/"StartedAt" (unix).
	ID        string          `json:"ID"`
	Id2       string          `json:"Id"`
	Names     json.RawMessage `json:"Names"`
	Image     string          `json:"Image"`
	ImageID   string          `json:"ImageID"`
	State     string          `json:"State"`
	Status    string          `json:"Status"`
	Labels    json.RawMessage `json:"Labels"`
	Ports     json.RawMessage `json:"Ports"`
	CreatedAt string          `json:"CreatedAt"`
	Created   json.RawMessage `json:"Created"`
	StartedAt json.RawMessage `json:"StartedAt"`
	IsInfra   bool            `json:"IsInfra"`
}

// ParsePS parses `docker ps -a --no-trunc --format json` (JSON lines) or
// `podman ps -a --format json` (an array) into containers of engine e.
func ParsePS(e Engine, b []byte) ([]Container, error) {
	vals, err := decodeEntries[psEntry](b)
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(vals))
	for _, p := range vals {
		if p.IsInfra {
			continue // a pod's infra container is podman's, not the operator's
		}
		c := Container{Engine: e, ID: firstNonEmpty(p.ID, p.Id2), Image: p.Image, ImageID: trimSHA(p.ImageID),
			State: strings.ToLower(p.State), Status: p.Status, Update: UpdateNotChecked, Ports: []Port{}}
		if c.ID == "" {
			return nil, fmt.Errorf("%w: ps entry without id", ErrFormat)
		}
		c.Name = parseNames(p.Names)
		c.labels = parseLabels(p.Labels)
		c.Ports = parsePorts(p.Ports)
		c.Health = healthFromStatus(p.Status)
		if t, ok := parseTime(p.Created, p.CreatedAt); ok {
			c.CreatedAt = &t
		}
		if t, ok := parseTime(p.StartedAt, ""); ok {
			c.StartedAt = &t
		}
		c.setCompose()
		out = append(out, c)
	}
	return out, nil
}

func (c *Container) setCompose() {
	c.ComposeProject = c.labels[LabelProject]
	c.ComposeService = c.labels[LabelService]
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func trimSHA(id string) string { return strings.TrimPrefix(id, "sha256:") }

func parseNames(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimPrefix(strings.Split(s, ",")[0], "/")
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil && len(ss) > 0 {
		return strings.TrimPrefix(ss[0], "/")
	}
	return ""
}

// parseLabels reads podman's object or docker's "k=v,k=v" string. A
// docker label value may itself hold commas (compose's config_files lists
// files with commas): a segment without "=" continues the previous value.
func parseLabels(raw json.RawMessage) map[string]string {
	m := map[string]string{}
	if len(raw) == 0 {
		return m
	}
	if raw[0] == '{' {
		_ = json.Unmarshal(raw, &m)
		return m
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || s == "" {
		return m
	}
	last := ""
	for _, seg := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(seg, "=")
		if !ok || k == "" || strings.ContainsAny(k, " /") {
			if last != "" {
				m[last] += "," + seg
			}
			continue
		}
		m[k] = v
		last = k
	}
	return m
}

// podmanPort is one entry of podman's Ports.
type podmanPort struct {
	HostIP        string `json:"host_ip"`
	ContainerPort int    `json:"container_port"`
	HostPort      int    `json:"host_port"`
	Range         int    `json:"range"`
	Protocol      string `json:"protocol"`
}

// parsePorts reads podman's list or docker's
// "127.0.0.1:8080->80/tcp, :::8080->80/tcp, 443/tcp".
func parsePorts(raw json.RawMessage) []Port {
	out := []Port{}
	if len(raw) == 0 {
		return out
	}
	if raw[0] == '[' {
		var pp []podmanPort
		if json.Unmarshal(raw, &pp) != nil {
			return out
		}
		for _, p := range pp {
			n := max(p.Range, 1)
			for i := 0; i < n && i < 1024; i++ {
				hp := p.HostPort
				if hp != 0 {
					hp += i
				}
				out = append(out, Port{HostIP: p.HostIP, HostPort: hp, ContainerPort: p.ContainerPort + i, Protocol: orTCP(p.Protocol)})
			}
		}
		return out
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		if p, ok := parseDockerPort(strings.TrimSpace(part)); ok {
			out = append(out, p)
		}
	}
	return out
}

func orTCP(p string) string {
	if p == "" {
		return "tcp"
	}
	return strings.ToLower(p)
}

func parseDockerPort(s string) (Port, bool) {
	if s == "" {
		return Port{}, false
	}
	var p Port
	host, ctr, mapped := strings.Cut(s, "->")
	if !mapped {
		ctr, host = s, ""
	}
	num, proto, _ := strings.Cut(ctr, "/")
	p.Protocol = orTCP(proto)
	cp, err := strconv.Atoi(strings.Split(num, "-")[0])
	if err != nil || cp < 0 || cp > 65535 {
		return Port{}, false
	}
	p.ContainerPort = cp
	if mapped {
		i := strings.LastIndex(host, ":")
		if i < 0 {
			return Port{}, false
		}
		hp, err := strconv.Atoi(strings.Split(host[i+1:], "-")[0])
		if err != nil || hp < 0 || hp > 65535 {
			return Port{}, false
		}
		p.HostIP, p.HostPort = host[:i], hp
	}
	return p, true
}

// healthFromStatus reads "(healthy)", "(unhealthy)", "(health: starting)".
func healthFromStatus(s string) string {
	switch {
	case strings.Contains(s, "(unhealthy)"):
		return "unhealthy"
	case strings.Contains(s, "(healthy)"):
		return "healthy"
	case strings.Contains(s, "(health: starting)"), strings.Contains(s, "(starting)"):
		return "starting"
	}
	return ""
}

// parseTime reads a unix number (podman) or docker's "2006-01-02 15:04:05
// -0700 MST" / RFC 3339 text. Zero and negative times are "unknown".
func parseTime(raw json.RawMessage, text string) (time.Time, bool) {
	if len(raw) > 0 {
		var n int64
		if json.Unmarshal(raw, &n) == nil {
			if n <= 0 {
				return time.Time{}, false
			}
			return time.Unix(n, 0).UTC(), true
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && text == "" {
			text = s
		}
	}
	if text == "" {
		return time.Time{}, false
	}
	for _, layout := range []string{"2006-01-02 15:04:05 -0700 MST", time.RFC3339Nano} {
		if t, err := time.Parse(layout, text); err == nil {
			if t.Year() <= 1 {
				return time.Time{}, false
			}
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// inspectEntry is the part of `docker inspect` / `podman inspect` of a
// container LCM reads; both engines share the shape.
type inspectEntry struct {
	ID           string `json:"Id"`
	Name         string `json:"Name"`
	Image        string `json:"Image"`
	ImageDigest  string `json:"ImageDigest"`
	ImageName    string `json:"ImageName"`
	RestartCount int    `json:"RestartCount"`
	Created      string `json:"Created"`
	State        struct {
		Status    string `json:"Status"`
		StartedAt string `json:"StartedAt"`
		Health    *struct {
			Status string `json:"Status"`
		} `json:"Health"`
		Healthcheck *struct {
			Status string `json:"Status"`
		} `json:"Healthcheck"`
	} `json:"State"`
	Config struct {
		Image  string            `json:"Image"`
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
}

// Inspected is what inspect adds to a ps entry.
type Inspected struct {
	ID           string
	Name         string
	ImageID      string
	ImageDigest  string
	State        string
	Health       string
	RestartCount int
	CreatedAt    *time.Time
	StartedAt    *time.Time
	Labels       map[string]string
}

// ParseInspect parses `docker inspect` or `podman inspect` of containers.
func ParseInspect(b []byte) ([]Inspected, error) {
	vals, err := decodeEntries[inspectEntry](b)
	if err != nil {
		return nil, err
	}
	out := make([]Inspected, 0, len(vals))
	for _, e := range vals {
		if e.ID == "" {
			return nil, fmt.Errorf("%w: inspect entry without id", ErrFormat)
		}
		in := Inspected{ID: e.ID, Name: strings.TrimPrefix(e.Name, "/"), ImageID: trimSHA(e.Image), ImageDigest: e.ImageDigest,
			State: strings.ToLower(e.State.Status), RestartCount: max(e.RestartCount, 0), Labels: e.Config.Labels}
		switch {
		case e.State.Health != nil && e.State.Health.Status != "":
			in.Health = e.State.Health.Status
		case e.State.Healthcheck != nil && e.State.Healthcheck.Status != "":
			in.Health = e.State.Healthcheck.Status
		}
		if t, ok := parseTime(nil, e.Created); ok {
			in.CreatedAt = &t
		}
		if t, ok := parseTime(nil, e.State.StartedAt); ok {
			in.StartedAt = &t
		}
		out = append(out, in)
	}
	return out, nil
}

// imageEntry is the union of docker's `image ls --format json` and
// podman's `images --format json`.
type imageEntry struct {
	// docker
	ID         string `json:"ID"`
	Repository string `json:"Repository"`
	Tag        string `json:"Tag"`
	// podman
	Id2         string   `json:"Id"`
	Names       []string `json:"Names"`
	Dangling    *bool    `json:"Dangling"`
	RepoDigests []string `json:"RepoDigests"`
	// both; docker prints Size and Containers as text
	Digest     string          `json:"Digest"`
	Size       json.RawMessage `json:"Size"`
	Containers json.RawMessage `json:"Containers"`
}

// ParseImages parses `docker image ls --no-trunc --digests --format json`
// or `podman images --format json`: one Image per repository:tag.
func ParseImages(e Engine, b []byte) ([]Image, error) {
	vals, err := decodeEntries[imageEntry](b)
	if err != nil {
		return nil, err
	}
	var out []Image
	seen := map[string]bool{}
	for _, p := range vals {
		id := trimSHA(firstNonEmpty(p.ID, p.Id2))
		if id == "" {
			return nil, fmt.Errorf("%w: image entry without id", ErrFormat)
		}
		base := Image{Engine: e, ID: id, Digest: cleanNone(p.Digest), Size: parseSize(p.Size), Containers: parseCount(p.Containers), Update: UpdateNotChecked}
		var refs [][2]string
		if p.Id2 != "" && p.ID == "" { // podman: Names lists every tag
			for _, n := range p.Names {
				refs = append(refs, splitRef(n))
			}
		} else if r, t := cleanNone(p.Repository), cleanNone(p.Tag); r != "" {
			refs = append(refs, [2]string{r, t})
		}
		if len(refs) == 0 {
			base.Repository, base.Tag, base.Dangling = "<none>", "<none>", p.Dangling == nil || *p.Dangling
			refs = nil
			if k := id + " <none>"; !seen[k] {
				seen[k] = true
				out = append(out, base)
			}
			continue
		}
		for _, rt := range refs {
			k := id + " " + rt[0] + ":" + rt[1]
			if seen[k] {
				continue // podman lists an image once per tag, each with all names
			}
			seen[k] = true
			im := base
			im.Repository, im.Tag = rt[0], rt[1]
			im.Digests = repoDigests(p.RepoDigests, rt[0])
			out = append(out, im)
		}
	}
	return out, nil
}

// repoDigests returns the digests of podman's RepoDigests
// ("repo@sha256:…") that belong to repo.
func repoDigests(rds []string, repo string) []string {
	var out []string
	for _, rd := range rds {
		if r, d, ok := strings.Cut(rd, "@"); ok && r == repo && !contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func cleanNone(s string) string {
	if s == "<none>" {
		return ""
	}
	return s
}

// splitRef splits "registry:5000/repo:tag" at the tag's colon (a colon
// before the last slash is a registry port).
func splitRef(s string) [2]string {
	i := strings.LastIndex(s, ":")
	if i < 0 || strings.Contains(s[i:], "/") {
		return [2]string{s, "latest"}
	}
	return [2]string{s[:i], s[i+1:]}
}

// parseSize reads podman's byte count or docker's "239MB" (decimal units,
// as docker prints them).
func parseSize(raw json.RawMessage) int64 {
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return max(n, 0)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	return ParseHumanSize(s)
}

// ParseHumanSize reads docker's sizes ("239MB", "1.5GB", "0B", "12B (25%)").
func ParseHumanSize(s string) int64 {
	s = strings.TrimSpace(strings.Split(strings.TrimSpace(s), " ")[0])
	units := []struct {
		suffix string
		mul    float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"KB", 1e3}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil || f < 0 || f > 1e6 {
				return 0
			}
			return int64(f * u.mul)
		}
	}
	return 0
}

func parseCount(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return max(n, 0)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.Atoi(s); err == nil {
			return max(n, 0)
		}
	}
	return 0
}

// Merge completes ps entries with inspect (digest, health, restart count,
// start time), marks images in use and dangling, and derives the compose
// projects. imageDigest fills a container's digest from its image when
// inspect did not carry one (docker).
func Merge(cs []Container, ins []Inspected, ims []Image) ([]Container, []Image, []ComposeProject) {
	byID := make(map[string]Inspected, len(ins))
	for _, in := range ins {
		byID[in.ID] = in
	}
	imgByID := map[string]*Image{}
	for i := range ims {
		if _, ok := imgByID[ims[i].ID]; !ok {
			imgByID[ims[i].ID] = &ims[i]
		}
	}
	for i := range cs {
		c := &cs[i]
		in, ok := byID[c.ID]
		if !ok { // docker ps may print a short id
			for id, v := range byID {
				if strings.HasPrefix(id, c.ID) {
					in, ok = v, true
					break
				}
			}
		}
		if ok {
			c.ID = in.ID
			c.ImageID = firstNonEmpty(in.ImageID, c.ImageID)
			c.ImageDigest = in.ImageDigest
			c.RestartCount = in.RestartCount
			c.State = firstNonEmpty(in.State, c.State)
			if in.Health != "" {
				c.Health = in.Health
			}
			if in.Name != "" && c.Name == "" {
				c.Name = in.Name
			}
			if in.CreatedAt != nil {
				c.CreatedAt = in.CreatedAt
			}
			if in.StartedAt != nil {
				c.StartedAt = in.StartedAt
			}
			if len(c.labels) == 0 && len(in.Labels) > 0 {
				c.labels = in.Labels
				c.setCompose()
			}
		}
		if im := imgByID[c.ImageID]; im != nil && c.ImageDigest == "" {
			c.ImageDigest = im.Digest
		}
	}
	use := map[string]int{}
	for _, c := range cs {
		if c.ImageID != "" {
			use[c.ImageID]++
		}
	}
	for i := range ims {
		n := use[ims[i].ID]
		ims[i].InUse = n > 0
		ims[i].Containers = n
		if ims[i].Dangling && n > 0 {
			ims[i].Dangling = false // an untagged image a container still runs is not prunable
		}
	}
	return cs, ims, composeProjects(cs)
}

func composeProjects(cs []Container) []ComposeProject {
	type key struct {
		e    Engine
		name string
	}
	idx := map[key]int{}
	var out []ComposeProject
	for _, c := range cs {
		if c.ComposeProject == "" {
			continue
		}
		k := key{c.Engine, c.ComposeProject}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, ComposeProject{Engine: c.Engine, Name: c.ComposeProject, ConfigFiles: []string{}, Update: UpdateNotChecked})
		}
		p := &out[i]
		if wd := c.labels[LabelWorkingDir]; wd != "" && p.WorkingDir == "" {
			p.WorkingDir = wd
		}
		if cf := c.labels[LabelConfigFiles]; cf != "" && len(p.ConfigFiles) == 0 {
			for _, f := range strings.Split(cf, ",") {
				if f = strings.TrimSpace(f); f != "" {
					p.ConfigFiles = append(p.ConfigFiles, f)
				}
			}
		}
		svc := firstNonEmpty(c.ComposeService, c.Name)
		j := -1
		for n := range p.Services {
			if p.Services[n].Name == svc {
				j = n
			}
		}
		if j < 0 {
			p.Services = append(p.Services, ComposeService{Name: svc, Containers: []string{}, Images: []string{}})
			j = len(p.Services) - 1
		}
		s := &p.Services[j]
		s.Containers = append(s.Containers, c.Name)
		if !contains(s.Images, c.Image) {
			s.Images = append(s.Images, c.Image)
		}
		s.State = mergeState(s.State, c.State)
	}
	for i := range out {
		p := &out[i]
		sort.Slice(p.Services, func(a, b int) bool { return p.Services[a].Name < p.Services[b].Name })
		run := 0
		for _, s := range p.Services {
			if s.State == "running" {
				run++
			}
		}
		switch {
		case run == len(p.Services):
			p.State = "running"
		case run == 0:
			p.State = "stopped"
		default:
			p.State = "partial"
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Name != out[b].Name {
			return out[a].Name < out[b].Name
		}
		return out[a].Engine < out[b].Engine
	})
	return out
}

// mergeState: a service is running only if all its containers run.
func mergeState(cur, next string) string {
	switch {
	case cur == "":
		return next
	case cur == next:
		return cur
	}
	return "partial"
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}
