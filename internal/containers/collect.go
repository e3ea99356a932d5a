package containers

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/lcmproject/lcm/internal/safe"
)

// marker starts each section of the collector's output: "@@lcm <engine>
// <section> <exit code>". The JSON the engines print never starts a line
// with it.
const marker = "@@lcm "

// Sections of the collector's output, per engine.
const (
	secVersion  = "version"
	secPS       = "ps"
	secInspect  = "inspect"
	secImages   = "images"
	secNetworks = "networks"
	secVolumes  = "volumes"
	secCompose  = "compose"
)

// Sudo is the prefix the collector and the actions put before an engine
// command: the management user reaches docker and podman through sudo -n
// (restricted sudo mode allows both).
const Sudo = "sudo -n "

// Script is the collector: one shell session that detects the engines
// (command -v docker podman) and, for each, prints the version, every
// container (ps -a), their inspect, the images, the network and volume ids
// and the compose front ends found. A server without an engine prints
// nothing and exits 0. A failing listing is reported by its exit code and
// the rest goes on.
func Script() string {
	return `set +e
sec() { printf '\n@@lcm %s %s %s\n' "$1" "$2" "$3"; }
# docker: one JSON object a line. "--format json" means that only from
# Docker 23 on (20.10, Debian 12's docker.io, prints the word "json");
# "{{json .}}" works in every version. podman: a JSON array.
fmt() { if [ "$1" = docker ]; then echo '{{json .}}'; else echo json; fi; }
for e in docker podman; do
  command -v "$e" >/dev/null 2>&1 || continue
  v=$(` + Sudo + `"$e" --version 2>&1); sec "$e" version $?; printf '%s\n' "$v"
  out=$(` + Sudo + `"$e" ps -a --no-trunc --format "$(fmt "$e")" 2>&1); sec "$e" ps $?; printf '%s\n' "$out"
  ids=$(` + Sudo + `"$e" ps -aq --no-trunc 2>/dev/null)
  if [ -n "$ids" ]; then out=$(` + Sudo + `"$e" inspect $ids 2>&1); sec "$e" inspect $?; printf '%s\n' "$out"; fi
  if [ "$e" = docker ]; then out=$(` + Sudo + `docker image ls -a --no-trunc --digests --format '{{json .}}' 2>&1); else out=$(` + Sudo + `podman images -a --format json 2>&1); fi
  sec "$e" images $?; printf '%s\n' "$out"
  out=$(` + Sudo + `"$e" network ls -q 2>&1); sec "$e" networks $?; printf '%s\n' "$out"
  out=$(` + Sudo + `"$e" volume ls -q 2>&1); sec "$e" volumes $?; printf '%s\n' "$out"
  sec "$e" compose 0
  if [ "$e" = docker ]; then
    ` + Sudo + `docker compose version >/dev/null 2>&1 && echo "docker compose"
    command -v docker-compose >/dev/null 2>&1 && echo docker-compose
  else
    ` + Sudo + `podman compose version >/dev/null 2>&1 && echo "podman compose"
    command -v podman-compose >/dev/null 2>&1 && echo podman-compose
  fi
done
exit 0
`
}

// section is one part of the collector's output.
type section struct {
	engine Engine
	name   string
	code   string
	body   []byte
}

func splitSections(b []byte) ([]section, error) {
	var out []section
	cur := -1
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if bytes.HasPrefix(line, []byte(marker)) {
			f := strings.Fields(string(line[len(marker):]))
			if len(f) != 3 || !Engine(f[0]).Valid() {
				return nil, fmt.Errorf("%w: bad section line %q", ErrFormat, truncate(string(line), 80))
			}
			out = append(out, section{engine: Engine(f[0]), name: f[1], code: f[2]})
			cur = len(out) - 1
			continue
		}
		if cur >= 0 {
			out[cur].body = append(append(out[cur].body, line...), '\n')
		}
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// parseInspect is ParseInspect; the panic test replaces it.
var parseInspect = ParseInspect

// ParseCollect turns the collector's output into a server's inventory.
// A listing that failed is named in its engine's Errors; a listing that
// cannot be parsed fails the whole collection (the engine printed
// something LCM does not understand, and a half inventory would be shown
// as the truth).
func ParseCollect(b []byte) (Inventory, error) {
	inv := Inventory{Engines: []EngineInfo{}, Containers: []Container{}, Images: []Image{}, Compose: []ComposeProject{}}
	secs, err := splitSections(b)
	if err != nil {
		return inv, err
	}
	type acc struct {
		info EngineInfo
		cs   []Container
		ins  []Inspected
		ims  []Image
	}
	var order []Engine
	by := map[Engine]*acc{}
	// The inspect sections are most of the bytes (60 % of the parse): they
	// are decoded on another core while ps and images are decoded here.
	// Each goroutine ends with its section; the channels are buffered, so
	// an early error return leaves none blocked.
	type inspected struct {
		v   []Inspected
		err error
	}
	pending := map[int]chan inspected{}
	for i, s := range secs {
		if s.name == secInspect && s.code == "0" {
			ch := make(chan inspected, 1)
			pending[i] = ch
			go func(b []byte) {
				// Hostile input from the managed host: a panic of the
				// parser fails this collection (recovered and counted).
				var r inspected
				if safe.Do("container inspect parser", func() { r.v, r.err = parseInspect(b) }) {
					r.err = errors.New("internal error while parsing the inspect output (logged with its stack)")
				}
				ch <- r
			}(s.body)
		}
	}
	for i, s := range secs {
		a := by[s.engine]
		if a == nil {
			a = &acc{info: EngineInfo{Engine: s.engine, ComposeTools: []string{}}}
			by[s.engine] = a
			order = append(order, s.engine)
		}
		if s.code != "0" {
			a.info.Errors = append(a.info.Errors, fmt.Sprintf("%s exited with code %s: %s", s.name, s.code, truncate(strings.TrimSpace(string(s.body)), 200)))
			continue
		}
		switch s.name {
		case secVersion:
			a.info.Version = ParseVersion(string(s.body))
		case secPS:
			if a.cs, err = ParsePS(s.engine, s.body); err != nil {
				return inv, fmt.Errorf("%s ps: %w", s.engine, err)
			}
		case secInspect:
			r := <-pending[i]
			if r.err != nil {
				return inv, fmt.Errorf("%s inspect: %w", s.engine, r.err)
			}
			a.ins = r.v
		case secImages:
			if a.ims, err = ParseImages(s.engine, s.body); err != nil {
				return inv, fmt.Errorf("%s images: %w", s.engine, err)
			}
		case secNetworks:
			a.info.Networks = countLines(s.body)
		case secVolumes:
			a.info.Volumes = countLines(s.body)
		case secCompose:
			for _, l := range strings.Split(string(s.body), "\n") {
				if l = strings.TrimSpace(l); l != "" && !contains(a.info.ComposeTools, l) {
					a.info.ComposeTools = append(a.info.ComposeTools, l)
				}
			}
		}
	}
	for _, e := range order {
		a := by[e]
		cs, ims, ps := Merge(a.cs, a.ins, a.ims)
		inv.Engines = append(inv.Engines, a.info)
		inv.Containers = append(inv.Containers, cs...)
		inv.Images = append(inv.Images, ims...)
		inv.Compose = append(inv.Compose, ps...)
	}
	sort.SliceStable(inv.Containers, func(i, j int) bool { return inv.Containers[i].Name < inv.Containers[j].Name })
	return inv, nil
}

// ParseVersion reads "Docker version 28.2.2, build e6534b4" or "podman
// version 4.3.1".
func ParseVersion(s string) string {
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i++ {
		if strings.EqualFold(f[i], "version") {
			return strings.TrimSuffix(f[i+1], ",")
		}
	}
	return ""
}

func countLines(b []byte) int {
	n := 0
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

// Find returns the container named (or with the id) ref.
func (inv *Inventory) Find(ref string) (Container, bool) {
	for _, c := range inv.Containers {
		if c.Name == ref || c.ID == ref {
			return c, true
		}
	}
	return Container{}, false
}

// FindImage returns the images matching ref: repository:tag, or an id
// (full or a prefix of at least 12 characters).
func (inv *Inventory) FindImage(ref string) []Image {
	var out []Image
	ref = trimSHA(ref)
	for _, im := range inv.Images {
		if im.Ref() == ref || im.ID == ref || (len(ref) >= 12 && strings.HasPrefix(im.ID, ref)) {
			out = append(out, im)
		}
	}
	return out
}

// NormalizeRef adds ":latest" to an image reference without tag or digest
// ("nginx" → "nginx:latest", "reg:5000/app" → "reg:5000/app:latest").
func NormalizeRef(ref string) string {
	if ref == "" || strings.Contains(ref, "@") {
		return ref
	}
	rt := splitRef(ref)
	return rt[0] + ":" + rt[1]
}
