package sshexec

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestWrapRoundTrip(t *testing.T) {
	for _, tt := range []Wrapped{
		{Cmd: "echo 'it''s' \"$HOME\"", Sudo: true, FramedStdin: true},
		{Cmd: "uname -r"},
		{Cmd: ""},
	} {
		got, ok := ParseWrapped(wrapCommand(tt.Cmd, tt.Sudo, tt.FramedStdin))
		if !ok || got != tt {
			t.Errorf("round trip %+v: got %+v ok=%v", tt, got, ok)
		}
	}
	if _, ok := ParseWrapped("sleep 1"); ok {
		t.Error("raw command parsed as wrapped")
	}
}

func TestFrames(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 10_000) // several frames
	var wire bytes.Buffer
	if err := writeFrames(&wire, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	wire.WriteString("lifeline bytes are never part of stdin")
	got, err := io.ReadAll(NewFrameReader(&wire))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("decoded %d bytes, err %v", len(got), err)
	}
	if _, err := io.ReadAll(NewFrameReader(strings.NewReader("x\n"))); err == nil {
		t.Fatal("bad frame accepted")
	}
}
