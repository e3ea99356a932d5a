package sections

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
)

// shExec runs commands with the machine's own /bin/sh: the scripts are
// tested against a real POSIX shell, not a model of one.
type shExec struct{}

func (shExec) Run(ctx context.Context, c remote.Command) (remote.Result, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", c.Cmd)
	cmd.Stdout, cmd.Stderr = c.Stdout, c.Stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return remote.Result{ExitCode: ee.ExitCode()}, nil
	}
	return remote.Result{}, err
}

func (shExec) Close() error { return nil }

// lockedBuffer is a console written from two goroutines (stdout through
// the demux and stderr), like a job's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunSectionsInOneShell(t *testing.T) {
	var console lockedBuffer
	var events []string
	secs := []Section{
		{Name: "age", Cmd: `echo 42; echo to-stderr >&2`},
		{Name: "refresh", Flags: Merge + Gate, Cmd: `echo fetching; echo "E: mirror down" >&2; exit 100`, Live: true, Keep: 1 << 10,
			Begin: func() { events = append(events, "refresh begins") },
			End:   func(r Result) { events = append(events, "refresh ends") }},
		{Name: "upgrade", Flags: Depends, Cmd: `echo never`, Live: true},
		{Name: "quotes", Cmd: `printf '%s\n' "it's" 'a "test"'`},
		{Name: "no-newline", Cmd: `printf 'no newline at the end'`},
	}
	res, err := Run(context.Background(), shExec{}, &console, secs, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["age"]; !r.Ran || !r.Done || r.Code != 0 || string(r.Stdout) != "42\n" {
		t.Errorf("age = %+v (%q)", r, r.Stdout)
	}
	if r := res["refresh"]; r.Code != 100 || string(r.Stdout) != "fetching\nE: mirror down\n" {
		t.Errorf("refresh = %+v (%q)", r, r.Stdout)
	}
	if r := res["upgrade"]; r.Ran {
		t.Errorf("upgrade ran after a failed gate: %+v", r)
	}
	if r := res["quotes"]; string(r.Stdout) != "it's\na \"test\"\n" {
		t.Errorf("quotes = %q", r.Stdout)
	}
	if r := res["no-newline"]; !r.Done || string(r.Stdout) != "no newline at the end" {
		t.Errorf("no-newline = %+v (%q)", r, r.Stdout)
	}
	// Live output and unmerged stderr reach the console; captured output
	// and markers do not.
	got := console.String()
	for _, want := range []string{"fetching\n", "E: mirror down\n", "to-stderr\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("console lacks %q: %q", want, got)
		}
	}
	for _, not := range []string{"42", "never", "lcm-", "begin", "it's"} {
		if strings.Contains(got, not) {
			t.Errorf("console has %q: %q", not, got)
		}
	}
	if strings.Join(events, ",") != "refresh begins,refresh ends" {
		t.Errorf("events %v", events)
	}
}

// A marker cut anywhere between two writes is still found, and bytes that
// only look like the start of a token are passed on.
func TestDemuxMarkersCutAcrossWrites(t *testing.T) {
	token := NewToken()
	secs := []Section{{Name: "a"}, {Name: "b", Live: true}}
	stream := "before\n" + BeginMarker(token, "a") + "captured " + token[:5] + " not a marker\n" + EndMarker(token, "a", 3) +
		BeginMarker(token, "b") + "live\n" + EndMarker(token, "b", 0) + "after"
	for cut := 1; cut < len(stream); cut++ {
		var out bytes.Buffer
		d := NewDemux(token, &out, secs)
		_, _ = d.Write([]byte(stream[:cut]))
		_, _ = d.Write([]byte(stream[cut:]))
		d.Close()
		res := d.Results()
		if got := string(res["a"].Stdout); got != "captured "+token[:5]+" not a marker\n" || res["a"].Code != 3 {
			t.Fatalf("cut %d: a = %q code %d", cut, got, res["a"].Code)
		}
		if out.String() != "before\nlive\nafter" {
			t.Fatalf("cut %d: out = %q", cut, out.String())
		}
	}
}

func TestParseReadsWhatScriptWrites(t *testing.T) {
	secs := []Section{{Name: "one", Cmd: "echo 'a b' && true\nif true; then\n  echo 'multi\nline'\nfi"}, {Name: "two", Flags: Merge + Gate, Cmd: `x="it's"; echo "$x"`}}
	token, lines, ok := Parse(Script("lcm-abc", secs))
	if !ok || token != "lcm-abc" || len(lines) != 2 {
		t.Fatalf("parse: %v %q %+v", ok, token, lines)
	}
	for i, s := range secs {
		if lines[i].Name != s.Name || lines[i].Flags != s.Flags || lines[i].Cmd != s.Cmd {
			t.Errorf("line %d = %+v, want %+v", i, lines[i], s)
		}
	}
	if _, _, ok := Parse("echo hello"); ok {
		t.Error("a plain command parsed as sections")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Script("lcm-1", []Section{{Name: "a", Cmd: "echo 'x'"}}))
	f.Add(Header + "t\nlcm_s a - 'unterminated")
	f.Fuzz(func(t *testing.T, s string) {
		_, lines, ok := Parse(s)
		if !ok {
			return
		}
		// What parses renders back to a script that parses the same.
		secs := make([]Section, len(lines))
		for i, l := range lines {
			secs[i] = Section{Name: l.Name, Flags: l.Flags, Cmd: l.Cmd}
		}
		_, again, ok := Parse(Script("lcm-x", secs))
		if !ok || len(again) != len(lines) {
			t.Fatalf("round trip: %v %d/%d", ok, len(again), len(lines))
		}
		for i := range lines {
			if again[i].Cmd != lines[i].Cmd {
				t.Fatalf("round trip cmd %q != %q", again[i].Cmd, lines[i].Cmd)
			}
		}
	})
}

func FuzzDemux(f *testing.F) {
	f.Add([]byte("x lcm-t begin a\nhello\nlcm-t end a 0\n"), 3)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		d := NewDemux("lcm-t", io.Discard, []Section{{Name: "a"}, {Name: "b", Live: true, Keep: 8}})
		if cut < 0 || cut > len(b) {
			cut = len(b) / 2
		}
		_, _ = d.Write(b[:cut])
		_, _ = d.Write(b[cut:])
		d.Close()
	})
}
