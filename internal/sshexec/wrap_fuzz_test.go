package sshexec

import (
	"bytes"
	"io"
	"testing"
)

// FuzzParseWrapped: ParseWrapped never panics on any line, and what
// wrapCommand produces parses back to the same command, sudo and stdin
// mode.
func FuzzParseWrapped(f *testing.F) {
	for _, s := range []string{"apt-get -s upgrade", "echo 'it''s'", "", "a'b'c\\'", "sudo -n true"} {
		f.Add(s, true, false)
	}
	f.Fuzz(func(t *testing.T, cmd string, sudo, framed bool) {
		line := wrapCommand(cmd, sudo, framed)
		w, ok := ParseWrapped(line)
		if !ok || w.Cmd != cmd || w.Sudo != sudo || w.FramedStdin != framed {
			t.Fatalf("%q → %+v %v", cmd, w, ok)
		}
		// Any line, the wrapped one cut anywhere too: no panic.
		_, _ = ParseWrapped(cmd)
		_, _ = ParseWrapped(line[:len(line)/2])
	})
}

// FuzzFrames: what writeFrames writes, NewFrameReader reads back whole;
// any input to NewFrameReader ends without a panic.
func FuzzFrames(f *testing.F) {
	f.Add([]byte("hello\nworld"), []byte("3\nabc0\n"))
	f.Add([]byte{}, []byte("x\n"))
	f.Fuzz(func(t *testing.T, data, raw []byte) {
		var framed bytes.Buffer
		if err := writeFrames(&framed, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(NewFrameReader(&framed))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("round trip: %q → %q (%v)", data, got, err)
		}
		_, _ = io.ReadAll(io.LimitReader(NewFrameReader(bytes.NewReader(raw)), 1<<20))
	})
}
