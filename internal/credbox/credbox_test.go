package credbox

import (
	"bytes"
	"reflect"
	"testing"
)

func TestSealOpen(t *testing.T) {
	a, err := NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewKeyPair()
	c := Credentials{JobID: "j", User: "lcm", PrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----secret"}
	sealed, err := Seal(c, a.Public[:])
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("secret")) {
		t.Fatal("plaintext visible in the sealed box")
	}
	got, err := a.Open(sealed)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("open: %v %+v", err, got)
	}
	if _, err := b.Open(sealed); err == nil {
		t.Fatal("another worker's key opened the box")
	}
	if _, err := Seal(c, []byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}
