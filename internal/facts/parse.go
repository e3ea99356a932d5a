package facts

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// sectionPrefix and sectionSuffix frame a section header line. The "lcm:"
// namespace keeps a stray line from /etc/motd or a shell rc file from ever
// being taken for a header.
const (
	sectionPrefix = "==lcm:section "
	sectionSuffix = "=="
)

// maxLines bounds the lines Parse reads so a runaway host (a df with a million
// bind mounts, garbage on stdout) cannot exhaust the worker's memory.
const maxLines = 200_000

// sections maps a section name to its lines, in output order.
type sections map[string][]string

// Parse turns the collector's output into Facts. It returns an error only when
// the output holds no section at all (it is not collector output); otherwise
// it returns whatever it could read, with Warnings for the rest.
func Parse(out []byte) (Facts, error) {
	secs, preamble := split(out)
	if len(secs) == 0 {
		return Facts{}, domain.Invalid("facts_no_sections", "output holds no lcm facts section")
	}
	p := &parser{secs: secs}
	if preamble > 0 {
		p.warn("%d line(s) before the first section ignored (shell banner?)", preamble)
	}
	if _, ok := secs["end"]; !ok {
		p.warn("output truncated: no end section")
	}
	f := Facts{}
	f.OS = p.osRelease()
	f.Kernel, f.Arch = p.kernel()
	f.Hostname = p.kv("hostname")["name"]
	f.UptimeSeconds = p.uptime()
	f.Virtualization = p.virt()
	f.CPU = p.cpu()
	f.Memory = p.memory()
	f.Mounts = p.mounts()
	f.Filesystems = p.df(f.Mounts)
	f.Addresses = p.addresses()
	f.Reboot = p.reboot(f.Virtualization)
	f.PackageManager = p.packageManager(f.OS)
	f.Warnings = p.warnings
	return f, nil
}

// split cuts the output into sections and counts non-empty lines before the
// first header.
func split(out []byte) (sections, int) {
	secs := sections{}
	cur, preamble, n := "", 0, 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4<<10), 1024*1024) // lines are short; a long one grows it
	for sc.Scan() && n < maxLines {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if name, ok := header(line); ok {
			cur = name
			if _, seen := secs[cur]; !seen {
				secs[cur] = nil
			}
			continue
		}
		if cur == "" {
			if strings.TrimSpace(line) != "" {
				preamble++
			}
			continue
		}
		secs[cur] = append(secs[cur], line)
	}
	return secs, preamble
}

func header(line string) (string, bool) {
	if !strings.HasPrefix(line, sectionPrefix) || !strings.HasSuffix(line, sectionSuffix) ||
		len(line) <= len(sectionPrefix)+len(sectionSuffix) {
		return "", false
	}
	return line[len(sectionPrefix) : len(line)-len(sectionSuffix)], true
}

// parser carries the sections and collects warnings.
type parser struct {
	secs     sections
	warnings []string
}

func (p *parser) warn(format string, args ...any) {
	p.warnings = append(p.warnings, fmt.Sprintf(format, args...))
}

// lines returns a section's lines and warns when it is absent or empty.
func (p *parser) lines(name string) []string {
	l, ok := p.secs[name]
	if !ok {
		p.warn("section %q missing", name)
	} else if len(l) == 0 {
		p.warn("section %q empty", name)
	}
	return l
}

// kv reads a section of key=value lines; the last value of a key wins.
func (p *parser) kv(name string) map[string]string {
	m := map[string]string{}
	for _, l := range p.lines(name) {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// kvAll reads a section of key=value lines keeping every value per key.
func (p *parser) kvAll(name string) map[string][]string {
	m := map[string][]string{}
	for _, l := range p.lines(name) {
		if k, v, ok := strings.Cut(l, "="); ok {
			k = strings.TrimSpace(k)
			m[k] = append(m[k], strings.TrimSpace(v))
		}
	}
	return m
}

func (p *parser) osRelease() OSRelease {
	m := map[string]string{}
	for _, l := range p.lines("os-release") {
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.HasPrefix(strings.TrimSpace(k), "#") {
			continue
		}
		m[strings.TrimSpace(k)] = unquote(strings.TrimSpace(v))
	}
	o := OSRelease{
		ID:         strings.ToLower(m["ID"]),
		Name:       m["NAME"],
		PrettyName: m["PRETTY_NAME"],
		VersionID:  m["VERSION_ID"],
		Codename:   m["VERSION_CODENAME"],
	}
	if like := strings.Fields(strings.ToLower(m["ID_LIKE"])); len(like) > 0 {
		o.IDLike = like
	}
	if o.ID == "" && len(p.secs["os-release"]) > 0 {
		p.warn("os-release has no ID")
	}
	return o
}

// unquote strips os-release shell quoting ("…" or '…') and backslash escapes.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	if strings.Contains(v, `\`) {
		var b strings.Builder
		esc := false
		for _, r := range v {
			if !esc && r == '\\' {
				esc = true
				continue
			}
			esc = false
			b.WriteRune(r)
		}
		v = b.String()
	}
	return v
}

func (p *parser) kernel() (release, machine string) {
	m := p.kv("kernel")
	return m["release"], m["machine"]
}

func (p *parser) uptime() int64 {
	for _, l := range p.lines("uptime") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		s, err := strconv.ParseFloat(f[0], 64)
		if err != nil || s < 0 || s > 1e12 {
			p.warn("uptime %q unreadable", f[0])
			return 0
		}
		return int64(s)
	}
	return 0
}

func (p *parser) memory() Memory {
	kb := map[string]uint64{}
	for _, l := range p.lines("meminfo") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || n > 1<<53 {
			p.warn("meminfo %s unreadable", k)
			continue
		}
		kb[k] = n
	}
	m := Memory{
		TotalBytes:     kb["MemTotal"] * 1024,
		SwapTotalBytes: kb["SwapTotal"] * 1024,
		SwapFreeBytes:  kb["SwapFree"] * 1024,
	}
	if a, ok := kb["MemAvailable"]; ok {
		m.AvailableBytes = a * 1024
	} else {
		// Kernels before 3.14 lack MemAvailable; free+buffers+cache is the
		// usual approximation.
		m.AvailableBytes = (kb["MemFree"] + kb["Buffers"] + kb["Cached"]) * 1024
	}
	return m
}

func (p *parser) cpu() CPU {
	var c CPU
	sockets := map[string]bool{}
	cores := map[string]bool{}
	coresPerSocket := 0
	phys := ""
	for _, l := range p.lines("cpuinfo") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			c.Threads++
			phys = ""
		case "model name", "cpu model", "Hardware", "Model":
			if c.Model == "" {
				c.Model = v
			}
		case "physical id":
			phys = v
			sockets[v] = true
		case "core id":
			cores[phys+"/"+v] = true
		case "cpu cores":
			if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 1<<20 {
				coresPerSocket = n
			}
		}
	}
	if c.Threads == 0 {
		return c
	}
	c.Sockets = max(len(sockets), 1)
	switch {
	case len(cores) > 0:
		c.Cores = len(cores)
	case coresPerSocket > 0:
		c.Cores = coresPerSocket * c.Sockets
	default:
		c.Cores = c.Threads
	}
	return c
}
