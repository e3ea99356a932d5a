// Package sshdcfg reads OpenSSH server configuration the way sshd does, as
// pure functions over text LCM fetched from a server: the effective
// configuration printed by `sshd -T`, and the configuration files
// themselves, so that LCM can say which line decides a keyword (sshd keeps
// the first value it reads; Match blocks apply per connection), and make or
// undo its own marked edits of the main file.
package sshdcfg

import (
	"bufio"
	"fmt"
	"path"
	"sort"
	"strings"
)

// MainPath is the main configuration file sshd reads.
const MainPath = "/etc/ssh/sshd_config"

// DropInDir is where distributions include drop-ins from.
const DropInDir = "/etc/ssh/sshd_config.d"

// IncludeLine is the Include LCM adds to a main file that has none.
const IncludeLine = "Include " + DropInDir + "/*.conf"

// Effective is `sshd -T` output: lower-case keyword to its values (some
// keywords, like port or listenaddress, repeat).
type Effective map[string][]string

// ParseEffective parses `sshd -T` output. Lines are "keyword value…";
// blank lines are skipped. It fails on a line that is no setting and
// without a port line, so empty or foreign output never reads as a
// configuration.
func ParseEffective(out string) (Effective, error) {
	e := Effective{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		k = strings.ToLower(k)
		if !validKeyword(k) {
			return nil, fmt.Errorf("sshdcfg: unexpected line in sshd -T output: %q", truncate(line, 80))
		}
		e[k] = append(e[k], strings.TrimSpace(v))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sshdcfg: %w", err)
	}
	if len(e["port"]) == 0 {
		// sshd -T always prints its port: without one this is not its output.
		return nil, fmt.Errorf("sshdcfg: sshd -T printed no port line: not an effective configuration")
	}
	return e, nil
}

// Get returns the first value of keyword k ("" when absent).
func (e Effective) Get(k string) string {
	if v := e[strings.ToLower(k)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Lines returns "keyword value" lines for the keywords ks, in that order
// (a proof as the operator reads it in sshd -T).
func (e Effective) Lines(ks ...string) []string {
	var out []string
	for _, k := range ks {
		for _, v := range e[strings.ToLower(k)] {
			out = append(out, strings.ToLower(k)+" "+v)
		}
	}
	return out
}

func validKeyword(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// File is one configuration file as fetched from a server.
type File struct {
	Path    string
	Content string
}

// fileMarker starts a file in the dump DumpScript prints.
const fileMarker = "==> lcm-file "

// DumpScript prints the main file and every file its Include lines name
// (globs expanded, relative paths taken from /etc/ssh), each after a marker
// line. It needs root only for files that are not world-readable.
const DumpScript = `M=` + MainPath + `
printf '%s%s <==\n' '` + fileMarker + `' "$M"; cat "$M"; echo
for p in $(awk 'tolower($1)=="include"{for(i=2;i<=NF;i++){if($i ~ /^#/)break; print $i}}' "$M"); do
  case "$p" in /*) ;; *) p="/etc/ssh/$p";; esac
  for f in $p; do [ -f "$f" ] || continue; printf '%s%s <==\n' '` + fileMarker + `' "$f"; cat "$f"; echo; done
done`

// ParseDump splits DumpScript output into files. The first file is the
// main file; a dump without it is an error.
func ParseDump(out string) ([]File, error) {
	var files []File
	var cur *File
	var b strings.Builder
	flush := func() {
		if cur != nil {
			cur.Content = b.String()
			files = append(files, *cur)
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(out, "\n") {
		t := strings.TrimRight(line, "\n")
		if strings.HasPrefix(t, fileMarker) && strings.HasSuffix(t, " <==") {
			flush()
			p := strings.TrimSuffix(strings.TrimPrefix(t, fileMarker), " <==")
			cur = &File{Path: p}
			continue
		}
		if cur != nil {
			b.WriteString(line)
		}
	}
	flush()
	if len(files) == 0 || files[0].Path != MainPath {
		return nil, fmt.Errorf("sshdcfg: the configuration dump does not start with %s", MainPath)
	}
	return files, nil
}

// Setting is one line that sets a keyword.
type Setting struct {
	Path  string // file
	Line  int    // 1-based
	Text  string // the line as written
	Value string // its first argument
	// Match is the criteria of the Match block the line is in ("" when
	// global).
	Match string
}

// String is "path:line: text" (and the Match block when there is one).
func (s Setting) String() string {
	if s.Match != "" {
		return fmt.Sprintf("%s:%d: %s (inside \"Match %s\")", s.Path, s.Line, s.Text, s.Match)
	}
	return fmt.Sprintf("%s:%d: %s", s.Path, s.Line, s.Text)
}

// Trace lists every line that sets keyword, in the order sshd reads them:
// the main file top to bottom, each Include expanded where it stands
// (matching files in lexical order). files[0] is the main file; an
// Include of a file not in files is skipped.
func Trace(files []File, keyword string) []Setting {
	if len(files) == 0 {
		return nil
	}
	byPath := map[string]File{}
	var paths []string
	for _, f := range files {
		if _, dup := byPath[f.Path]; !dup {
			paths = append(paths, f.Path)
		}
		byPath[f.Path] = f
	}
	sort.Strings(paths)
	var out []Setting
	seen := map[string]bool{}
	var walk func(f File, match string, depth int)
	walk = func(f File, match string, depth int) {
		if depth > 8 || seen[f.Path] && depth > 0 {
			return
		}
		seen[f.Path] = true
		defer delete(seen, f.Path)
		for i, raw := range strings.Split(f.Content, "\n") {
			k, args := splitLine(raw)
			switch k {
			case "":
				continue
			case "match":
				match = strings.Join(args, " ")
				if strings.EqualFold(match, "all") {
					match = ""
				}
				continue
			case "include":
				for _, pat := range args {
					if !strings.HasPrefix(pat, "/") {
						pat = "/etc/ssh/" + pat
					}
					for _, p := range paths {
						if ok, _ := path.Match(pat, p); ok && p != f.Path {
							walk(byPath[p], match, depth+1)
						}
					}
				}
				continue
			}
			if k == strings.ToLower(keyword) {
				v := ""
				if len(args) > 0 {
					v = strings.ToLower(args[0])
				}
				out = append(out, Setting{Path: f.Path, Line: i + 1, Text: strings.TrimSpace(raw), Value: v, Match: match})
			}
		}
	}
	walk(files[0], "", 0)
	return out
}

// Winner is the global line that decides keyword for connections no Match
// block catches: the first one sshd reads. ok is false when no global line
// sets it (sshd's default applies).
func Winner(ss []Setting) (Setting, bool) {
	for _, s := range ss {
		if s.Match == "" {
			return s, true
		}
	}
	return Setting{}, false
}

// splitLine returns a line's lower-case keyword and its arguments
// ("Keyword value", "Keyword=value", quotes removed); comments and blank
// lines give "".
func splitLine(raw string) (string, []string) {
	s := strings.TrimSpace(raw)
	if s == "" || strings.HasPrefix(s, "#") {
		return "", nil
	}
	i := strings.IndexAny(s, " \t=")
	if i < 0 {
		return strings.ToLower(s), nil
	}
	k := strings.ToLower(s[:i])
	rest := strings.TrimLeft(s[i:], " \t")
	rest = strings.TrimPrefix(rest, "=")
	var args []string
	for _, f := range strings.Fields(rest) {
		if strings.HasPrefix(f, "#") {
			break
		}
		args = append(args, strings.Trim(f, `"`))
	}
	return k, args
}

// HasDropInInclude reports whether the main file includes DropInDir/*.conf
// (or a pattern that matches a file name in it) outside any Match block.
func HasDropInInclude(main string) bool {
	inMatch := false
	for _, raw := range strings.Split(main, "\n") {
		k, args := splitLine(raw)
		switch k {
		case "match":
			inMatch = !(len(args) == 1 && strings.EqualFold(args[0], "all"))
		case "include":
			if inMatch {
				continue
			}
			for _, a := range args {
				if !strings.HasPrefix(a, "/") {
					a = "/etc/ssh/" + a
				}
				if ok, _ := path.Match(a, DropInDir+"/60-lcm-hardening.conf"); ok {
					return true
				}
			}
		}
	}
	return false
}

// Marker prefixes of LCM's edits in the main file. Feature names which
// LCM action made the edit, so undoing one action leaves another's edits.
const (
	disabledPrefix = "#lcm-disabled:"
	addedSuffix    = " # lcm-added"
)

// Edit is LCM's marked edit of the main file for feature. want maps
// lower-case keywords to the value LCM's drop-in sets. Lines setting one
// of them to another value that would win over the drop-in (global lines
// read before the Include) or override it (Match blocks) are commented out
// as "#lcm-disabled:<feature># <line>"; when the main file has no Include
// of the drop-in directory, one is added at the top, marked "# lcm-added"
// (and then every global line comes after it). Lines feature marked
// before are judged again: one that no longer conflicts with want (root
// login set back to what the line says) is restored, so the edit stays
// exactly as large as the setting needs. It returns the new content and
// what it changed, in plain words; an unchanged file returns changes ==
// nil.
func Edit(main, feature string, want map[string]string) (string, []string) {
	lines := strings.Split(main, "\n")
	var changes []string
	hasInclude := HasDropInInclude(main)
	seenInclude := !hasInclude // the added Include comes first
	inMatch := false
	mark := disabledPrefix + feature + "# "
	for i, raw := range lines {
		marked := strings.HasPrefix(raw, mark)
		line := strings.TrimPrefix(raw, mark)
		k, args := splitLine(line)
		switch k {
		case "match":
			inMatch = !(len(args) == 1 && strings.EqualFold(args[0], "all"))
			continue
		case "include":
			if !inMatch {
				seenInclude = true
			}
			continue
		}
		w, ok := want[k]
		// Global lines after the Include lose to the drop-in anyway; lines
		// before it win, and Match blocks override.
		conflicts := ok && !(len(args) > 0 && strings.EqualFold(args[0], w)) && (inMatch || !seenInclude)
		switch {
		case conflicts && !marked:
			lines[i] = mark + line
			changes = append(changes, fmt.Sprintf("%s:%d: %q commented out (marked %s%s#)", MainPath, i+1, strings.TrimSpace(line), disabledPrefix, feature))
		case !conflicts && marked:
			lines[i] = line
			changes = append(changes, fmt.Sprintf("%s:%d: %q restored (it no longer conflicts)", MainPath, i+1, strings.TrimSpace(line)))
		}
	}
	if !hasInclude {
		lines = append([]string{IncludeLine + addedSuffix}, lines...)
		changes = append(changes, fmt.Sprintf("%s:1: %q added", MainPath, IncludeLine))
	}
	if changes == nil {
		return main, nil
	}
	return strings.Join(lines, "\n"), changes
}

// Revert undoes feature's marked edits: its commented-out lines come back
// as they were. The Include LCM added is removed when removeInclude is set
// (the caller knows no LCM drop-in needs it any more). Unchanged content
// returns changes == nil.
func Revert(main, feature string, removeInclude bool) (string, []string) {
	lines := strings.Split(main, "\n")
	out := lines[:0:0]
	var changes []string
	prefix := disabledPrefix + feature + "# "
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, prefix):
			out = append(out, strings.TrimPrefix(l, prefix))
			changes = append(changes, fmt.Sprintf("%s:%d: %q restored", MainPath, i+1, strings.TrimPrefix(l, prefix)))
		case removeInclude && l == IncludeLine+addedSuffix:
			changes = append(changes, fmt.Sprintf("%s:%d: the Include LCM added removed", MainPath, i+1))
		default:
			out = append(out, l)
		}
	}
	if changes == nil {
		return main, nil
	}
	return strings.Join(out, "\n"), changes
}

// HasMarks reports whether main still holds edits of any LCM feature.
func HasMarks(main string) bool {
	for _, l := range strings.Split(main, "\n") {
		if strings.HasPrefix(l, disabledPrefix) {
			return true
		}
	}
	return false
}
