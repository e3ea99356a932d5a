package secret

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func newKR(t testing.TB) *Keyring {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	kr, err := NewKeyring(k)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func TestSealOpen(t *testing.T) {
	kr := newKR(t)
	for _, pt := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("console output "), 10000)} {
		ct, err := kr.Seal(pt, "servers.name")
		if err != nil {
			t.Fatal(err)
		}
		if id, ok := KeyIDOf(ct); !ok || id != kr.ID() {
			t.Fatalf("key id %q", id)
		}
		got, err := kr.Open(ct, "servers.name")
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("roundtrip failed: %v", err)
		}
		if _, err := kr.Open(ct, "servers.host"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("other aad: %v", err)
		}
	}
	ct, _ := kr.Seal([]byte("secret"), "a")
	if _, err := newKR(t).Open(ct, "a"); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("wrong key: %v", err)
	}
	ct[len(ct)-1] ^= 1
	if _, err := kr.Open(ct, "a"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("tampered: %v", err)
	}
	if _, err := kr.Open([]byte{1, 2}, "a"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short: %v", err)
	}
}

func TestBlindIndex(t *testing.T) {
	kr := newKR(t)
	if kr.BlindIndex("servers.name", " Web-01 ") != kr.BlindIndex("servers.name", "web-01") {
		t.Fatal("normalisation")
	}
	if kr.BlindIndex("servers.name", "web-01") == kr.BlindIndex("servers.host", "web-01") {
		t.Fatal("domains must separate")
	}
	if kr.BlindIndex("d", "web-01") == newKR(t).BlindIndex("d", "web-01") {
		t.Fatal("index must depend on the key")
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeyFileName)
	if _, err := ReadKeyFile(path); !errors.Is(err, ErrNoKeyFile) {
		t.Fatalf("missing: %v", err)
	}
	k, _ := GenerateKey()
	if err := WriteKeyFile(path, k); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	if err := WriteKeyFile(path, k); err == nil {
		t.Fatal("overwrote an existing key")
	}
	got, err := ReadKeyFile(path)
	if err != nil || !bytes.Equal(got, k) {
		t.Fatalf("read back: %v", err)
	}
	os.WriteFile(path, []byte("lcm-master-key-v1:abc\n"), 0o600)
	if _, err := ReadKeyFile(path); err == nil {
		t.Fatal("corrupt key accepted")
	}
}

func FuzzOpen(f *testing.F) {
	kr := newKR(f)
	ct, _ := kr.Seal([]byte("hello"), "t.c")
	f.Add(ct)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := kr.Open(b, "t.c"); err == nil && !bytes.Equal(b, ct) {
			t.Fatal("forged ciphertext accepted")
		}
	})
}

func BenchmarkSealOpen1MiB(b *testing.B) {
	kr := newKR(b)
	pt := bytes.Repeat([]byte("Setting up libssl3:amd64 (3.0.17-1~deb12u2) ...\n"), 1<<20/50)
	b.SetBytes(int64(len(pt)) * 2)
	for b.Loop() {
		ct, err := kr.Seal(pt, "job_output.data")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := kr.Open(ct, "job_output.data"); err != nil {
			b.Fatal(err)
		}
	}
}
