// Package sections runs several commands in ONE remote session and tells
// their outputs apart by marker lines. LCM's package actions use it so a
// package change and the inventory refresh that follows cost one SSH
// channel instead of eight (each channel is an open, an exec, an exit
// status and a close, on both ends). It imports only the standard library
// and remote, so simulators can parse the scripts it writes.
//
// A sectioned script is plain POSIX sh:
//
//	: lcm-sections v1 TOKEN
//	lcm_t=TOKEN
//	lcm_s() { … }                      # prints the markers, runs $3
//	lcm_s NAME FLAGS 'COMMAND'         # one line per section
//
// Each section prints "TOKEN begin NAME\n", runs COMMAND with `sh -c`,
// then prints "TOKEN end NAME CODE\n". TOKEN is 16 random bytes in hex,
// so no command output can contain it by accident. FLAGS is "-" or
// letters: m merges the section's stderr into its stdout (its error
// message is then readable from the captured bytes), x marks a gate (if
// it fails, later d sections are skipped), d depends on the gates before
// it. Every other section runs whatever happened before (the inventory
// after a failed upgrade is still read, as separate commands did).
package sections

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
)

// Header starts every sectioned script; the token follows it.
const Header = ": lcm-sections v1 "

// shellFunc is the shell function each section line calls.
const shellFunc = `lcm_s() {
if [ -n "${lcm_x:-}" ]; then case $2 in *d*) return 0;; esac; fi
printf '%s begin %s\n' "$lcm_t" "$1"
case $2 in *m*) sh -c "$3" 2>&1;; *) sh -c "$3";; esac
lcm_c=$?
printf '%s end %s %s\n' "$lcm_t" "$1" "$lcm_c"
case $2 in *x*) [ "$lcm_c" = 0 ] || lcm_x=1;; esac
return 0
}`

// Flags of a section (see the package doc).
const (
	Merge   = "m"
	Gate    = "x"
	Depends = "d"
)

// Section is one step of a sectioned script.
type Section struct {
	Name  string // letters, digits and '-', unique in the script
	Flags string // "" or letters of Merge, Gate, Depends
	Cmd   string
	// Live sends the section's stdout to the console as it arrives; else
	// it is only captured.
	Live bool
	// Keep bounds what is captured of a live section (its last bytes, for
	// an error message); 0 captures nothing of a live section. A captured
	// section keeps everything.
	Keep int
	// Begin and End run as the markers arrive, in stream order with the
	// output, so an action can print its own lines around a section.
	Begin func()
	End   func(r Result)
}

// Result is what one section did.
type Result struct {
	Ran    bool // its begin marker arrived
	Done   bool // its end marker arrived
	Code   int
	Stdout []byte // captured stdout (the kept tail of a live section)
	Took   time.Duration
}

// Script renders secs with token.
func Script(token string, secs []Section) string {
	var b strings.Builder
	b.WriteString(Header + token + "\nlcm_t=" + token + "\n" + shellFunc + "\n")
	for _, s := range secs {
		flags := s.Flags
		if flags == "" {
			flags = "-"
		}
		fmt.Fprintf(&b, "lcm_s %s %s %s\n", s.Name, flags, quote(s.Cmd))
	}
	return b.String()
}

// NewToken returns a fresh marker token.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "lcm-" + hex.EncodeToString(b)
}

// Run runs secs in one session on ex and returns each section's result by
// name. The error is the transport's (the session did not run or did not
// finish); exit codes are in the results. A section whose begin marker
// never arrived (skipped after a failed gate, or the session ended early)
// has Ran false. stderr of every section that does not merge it goes to
// out, as it arrives.
func Run(ctx context.Context, ex remote.Executor, out io.Writer, secs []Section, timeout, idle time.Duration) (map[string]*Result, error) {
	token := NewToken()
	d := NewDemux(token, out, secs)
	_, err := ex.Run(ctx, remote.Command{Cmd: Script(token, secs), Stdout: d, Stderr: out, Timeout: timeout, IdleTimeout: idle})
	d.Close()
	return d.Results(), err
}

// Demux is the stdout of a sectioned script: it finds the markers, sends
// each section's bytes where they belong and runs the callbacks.
type Demux struct {
	token []byte
	out   io.Writer
	secs  map[string]*Section

	mu      sync.Mutex
	buf     []byte // bytes not yet attributed (a marker may be cut)
	cur     *Section
	curRes  *Result
	started time.Time
	results map[string]*Result
}

// NewDemux returns the demultiplexer of a script with token and secs;
// bytes outside any section go to out.
func NewDemux(token string, out io.Writer, secs []Section) *Demux {
	d := &Demux{token: []byte(token), out: out, secs: map[string]*Section{}, results: map[string]*Result{}}
	for i := range secs {
		d.secs[secs[i].Name] = &secs[i]
		d.results[secs[i].Name] = &Result{}
	}
	return d
}

// Results returns the results by section name.
func (d *Demux) Results() map[string]*Result {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.results
}

// Write implements io.Writer.
func (d *Demux) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf = append(d.buf, p...)
	for {
		i := bytes.Index(d.buf, d.token)
		if i < 0 {
			// Hold back only what may be the start of a marker.
			keep := partialPrefix(d.buf, d.token)
			d.emit(d.buf[:len(d.buf)-keep])
			d.buf = append(d.buf[:0], d.buf[len(d.buf)-keep:]...)
			return len(p), nil
		}
		d.emit(d.buf[:i])
		nl := bytes.IndexByte(d.buf[i:], '\n')
		if nl < 0 {
			d.buf = append(d.buf[:0], d.buf[i:]...)
			return len(p), nil
		}
		d.marker(string(d.buf[i+len(d.token) : i+nl]))
		d.buf = append(d.buf[:0], d.buf[i+nl+1:]...)
	}
}

// partialPrefix is the length of the longest suffix of b that is a proper
// prefix of token.
func partialPrefix(b, token []byte) int {
	for k := min(len(token)-1, len(b)); k > 0; k-- {
		if bytes.HasPrefix(token, b[len(b)-k:]) {
			return k
		}
	}
	return 0
}

// emit attributes bytes to the current section (or to out outside any).
func (d *Demux) emit(b []byte) {
	if len(b) == 0 {
		return
	}
	s, r := d.cur, d.curRes
	if s == nil {
		_, _ = d.out.Write(b)
		return
	}
	if !s.Live {
		r.Stdout = append(r.Stdout, b...)
		return
	}
	_, _ = d.out.Write(b)
	if s.Keep > 0 {
		r.Stdout = append(r.Stdout, b...)
		if len(r.Stdout) > s.Keep {
			r.Stdout = append(r.Stdout[:0], r.Stdout[len(r.Stdout)-s.Keep:]...)
		}
	}
}

// marker handles " begin NAME" or " end NAME CODE".
func (d *Demux) marker(m string) {
	f := strings.Fields(m)
	switch {
	case len(f) == 2 && f[0] == "begin":
		s, r := d.secs[f[1]], d.results[f[1]]
		if s == nil {
			return
		}
		d.cur, d.curRes, d.started = s, r, time.Now()
		r.Ran = true
		if s.Begin != nil {
			s.Begin()
		}
	case len(f) == 3 && f[0] == "end":
		s, r := d.secs[f[1]], d.results[f[1]]
		if s == nil {
			return
		}
		code, err := strconv.Atoi(f[2])
		if err != nil {
			code = -1
		}
		r.Done, r.Code, r.Took = true, code, time.Since(d.started)
		d.cur, d.curRes = nil, nil
		if s.End != nil {
			s.End(*r)
		}
	}
}

// Close flushes bytes still held back (a session that ended inside a
// section).
func (d *Demux) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.emit(d.buf)
	d.buf = nil
}

// Line is one section of a sectioned script, as Parse reads it.
type Line struct {
	Name, Flags, Cmd string
}

// Parse reads a sectioned script as a simulator needs it: the token and,
// per section line, its name, flags and command. ok is false for any
// other command.
func Parse(script string) (token string, lines []Line, ok bool) {
	first, rest, _ := strings.Cut(script, "\n")
	token, found := strings.CutPrefix(first, Header)
	if !found || token == "" || strings.ContainsAny(token, " \t") {
		return "", nil, false
	}
	// The section lines follow the function definition.
	_, rest, found = strings.Cut(rest, "\n}\n")
	if !found {
		return "", nil, false
	}
	for rest != "" {
		after, found := strings.CutPrefix(rest, "lcm_s ")
		if !found {
			return "", nil, false
		}
		name, after, _ := strings.Cut(after, " ")
		flags, after, _ := strings.Cut(after, " ")
		cmd, n, err := unquote(after)
		if err != nil || name == "" {
			return "", nil, false
		}
		if flags == "-" {
			flags = ""
		}
		lines = append(lines, Line{Name: name, Flags: flags, Cmd: cmd})
		rest = strings.TrimPrefix(after[n:], "\n")
	}
	return token, lines, true
}

// BeginMarker and EndMarker are the lines a section prints around its
// output (for simulators answering a sectioned script).
func BeginMarker(token, name string) string { return token + " begin " + name + "\n" }

// EndMarker: see BeginMarker.
func EndMarker(token, name string, code int) string {
	return token + " end " + name + " " + strconv.Itoa(code) + "\n"
}

// quote single-quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// unquote reads one word written by quote at the start of s and returns
// its value and how many bytes of s it took (it ends at an unquoted
// newline or the end of s).
func unquote(s string) (string, int, error) {
	var b strings.Builder
	i := 0
	for i < len(s) && s[i] != '\n' {
		switch {
		case strings.HasPrefix(s[i:], `\'`):
			b.WriteByte('\'')
			i += 2
		case s[i] == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return "", 0, fmt.Errorf("sections: unterminated quote")
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 2
		default:
			return "", 0, fmt.Errorf("sections: not a quoted word")
		}
	}
	if i == 0 {
		return "", 0, fmt.Errorf("sections: empty word")
	}
	return b.String(), i, nil
}
