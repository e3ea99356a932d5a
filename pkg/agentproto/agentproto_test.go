package agentproto

import (
	"errors"
	"strings"
	"testing"
)

func validToken(t *testing.T) Token {
	t.Helper()
	sec, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return Token{AgentID: NewID(), Secret: sec, GatewayURL: "wss://lcm.example.net:9320/mqtt",
		TLSFingerprintSHA256: FingerprintSHA256([]byte("cert"))}
}

func TestTokenRoundTrip(t *testing.T) {
	tok := validToken(t)
	s, err := tok.Format()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s, TokenPrefix) {
		t.Fatalf("token %q lacks prefix", s)
	}
	got, err := ParseToken("  " + s + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if got != tok {
		t.Fatalf("round trip: %+v != %+v", got, tok)
	}
}

func TestTokenValidation(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Token)
	}{
		{"agent id not uuid", func(k *Token) { k.AgentID = "agent.1" }},
		{"agent id upper case", func(k *Token) { k.AgentID = strings.ToUpper(k.AgentID) }},
		{"short secret", func(k *Token) { k.Secret = "abc" }},
		{"http url", func(k *Token) { k.GatewayURL = "https://h:9320/mqtt" }},
		{"ws url", func(k *Token) { k.GatewayURL = "ws://h:9320/mqtt" }},
		{"wrong path", func(k *Token) { k.GatewayURL = "wss://h:9320/" }},
		{"userinfo", func(k *Token) { k.GatewayURL = "wss://u:p@h:9320/mqtt" }},
		{"fingerprint with colons", func(k *Token) { k.TLSFingerprintSHA256 = "ab:cd" }},
		{"fingerprint empty", func(k *Token) { k.TLSFingerprintSHA256 = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := validToken(t)
			tt.mod(&tok)
			if _, err := tok.Format(); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Format accepted %+v: %v", tok, err)
			}
		})
	}
	for _, s := range []string{"", "lcm_abc", TokenPrefix + "!!!", TokenPrefix + "e30", TokenPrefix + "eyJ4IjoxfQ"} {
		if _, err := ParseToken(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseToken(%q) = %v", s, err)
		}
	}
}

func TestTopics(t *testing.T) {
	id := NewID()
	for _, c := range []Channel{ChannelCmd, ChannelRes, ChannelInv, ChannelStatus} {
		gotID, gotC, ok := ParseTopic(Topic(id, c))
		if !ok || gotID != id || gotC != c {
			t.Errorf("ParseTopic(Topic(%s, %s)) = %q %q %v", id, c, gotID, gotC, ok)
		}
	}
	for _, s := range []string{"lcm/a/+/cmd", "lcm/a/#", "lcm/a/" + id + "/cmd/x", "lcm/a/" + id + "/foo",
		"lcm/b/" + id + "/cmd", "lcm/a/" + id, "lcm/a/x/cmd"} {
		if _, _, ok := ParseTopic(s); ok {
			t.Errorf("ParseTopic(%q) accepted", s)
		}
	}
}

func TestDecode(t *testing.T) {
	id := NewID()
	b, err := Encode(&Output{Header: NewHeader(TypeOutput, id), Seq: 1, Stream: StreamStdout, Data: []byte{0, 1, 0xff}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := m.(*Output)
	if !ok || o.ID != id || string(o.Data) != "\x00\x01\xff" {
		t.Fatalf("decoded %#v", m)
	}
	bad := []string{
		`{"v":1,"type":"cmd","id":"` + id + `","cmd":""}`,
		`{"v":0,"type":"cmd","id":"` + id + `","cmd":"x"}`,
		`{"v":1,"type":"cmd","id":"nope","cmd":"x"}`,
		`{"v":1,"type":"boom","id":"` + id + `"}`,
		`{"v":1,"type":"output","id":"` + id + `","seq":0,"stream":"stdout"}`,
		`{"v":1,"type":"output","id":"` + id + `","seq":1,"stream":"tty"}`,
		`{"v":1,"type":"status","id":"` + id + `","state":"meh"}`,
		`not json`,
	}
	for _, s := range bad {
		if _, err := Decode([]byte(s)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%s) = %v", s, err)
		}
	}
	// A newer peer's unknown fields are ignored.
	if _, err := Decode([]byte(`{"v":7,"type":"cancel","id":"` + id + `","future":true}`)); err != nil {
		t.Errorf("newer version rejected: %v", err)
	}
	if _, err := Encode("x"); err == nil {
		t.Error("Encode accepted a string")
	}
}

func TestFingerprint(t *testing.T) {
	fp := FingerprintSHA256([]byte("x"))
	if !ValidFingerprint(fp) {
		t.Fatal(fp)
	}
	colons := strings.ToUpper(fp[:2] + ":" + fp[2:])
	if NormalizeFingerprint("SHA256:"+colons) != fp {
		t.Fatalf("normalize %q", colons)
	}
	if NormalizeFingerprint("abc") != "" {
		t.Fatal("short fingerprint normalised")
	}
	if !ValidAgentID(NewID()) {
		t.Fatal("NewID not valid")
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add(TokenPrefix + "eyJhZ2VudF9pZCI6IngifQ")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		if err != nil {
			return
		}
		again, err := tok.Format()
		if err != nil {
			t.Fatalf("parsed token does not format: %v", err)
		}
		if back, err := ParseToken(again); err != nil || back != tok {
			t.Fatalf("re-parse: %v %+v", err, back)
		}
	})
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"type":"cmd","id":"00000000-0000-4000-8000-000000000000","cmd":"true"}`))
	f.Add([]byte(`{"v":1,"type":"output","id":"00000000-0000-4000-8000-000000000000","seq":1,"stream":"stderr","data":"aGk="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		if _, err := Encode(m); err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
	})
}

func FuzzParseTopic(f *testing.F) {
	f.Add("lcm/a/00000000-0000-4000-8000-000000000000/cmd")
	f.Fuzz(func(t *testing.T, s string) {
		id, c, ok := ParseTopic(s)
		if ok && Topic(id, c) != s {
			t.Fatalf("ParseTopic(%q) = %q %q", s, id, c)
		}
	})
}
