package credbox

import (
	"testing"
	"unicode/utf8"
)

// FuzzOpen: Open never panics on any sealed bytes and opens nothing that
// was not sealed to its key; credentials of any content sealed to the key
// open to exactly themselves.
func FuzzOpen(f *testing.F) {
	f.Add([]byte("not sealed"), "job", "secret-password", "-----BEGIN KEY-----")
	f.Add([]byte{}, "", "", "")
	f.Fuzz(func(t *testing.T, junk []byte, job, password, key string) {
		k, err := NewKeyPair()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Open(junk); err == nil {
			t.Fatalf("opened %d bytes of junk", len(junk))
		}
		c := Credentials{JobID: job, Password: password, PrivateKey: key, Secrets: map[string]string{"k": password}}
		sealed, err := Seal(c, k.Public[:])
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Open(sealed)
		if err != nil {
			t.Fatal(err)
		}
		// JSON carries text (job ids, keys and passwords LCM seals are
		// text): compare what is valid UTF-8.
		same := func(a, b string) bool { return a == b || !utf8.ValidString(b) }
		if !same(got.JobID, job) || !same(got.Password, password) || !same(got.PrivateKey, key) {
			t.Fatalf("round trip: %+v → %+v", c, got)
		}
		other, _ := NewKeyPair()
		if _, err := other.Open(sealed); err == nil {
			t.Fatal("opened with another worker's key")
		}
	})
}
