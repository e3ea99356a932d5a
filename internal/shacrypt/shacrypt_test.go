package shacrypt

import (
	"os/exec"
	"strings"
	"testing"
)

// The test vectors of Drepper's SHA-crypt specification.
func TestSHA512CryptVectors(t *testing.T) {
	for _, v := range []struct{ setting, pw, want string }{
		{"$6$saltstring", "Hello world!", "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"},
		{"$6$rounds=10000$saltstringsaltstring", "Hello world!", "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v."},
		{"$6$rounds=5000$toolongsaltstring", "This is just a test", "$6$rounds=5000$toolongsaltstrin$lQ8jolhgVRVhY4b5pZKaysCLi0QBxGoNeKQzQ3glMhwllF7oGDZxUhx1yxdYcz/e1JSbq3y6JMxxl8audkUEm0"},
		{"$6$rounds=1400$anotherlongsaltstring", "a very much longer text to encrypt.  This one even stretches over morethan one line.", "$6$rounds=1400$anotherlongsalts$POfYwTEok97VWcjxIiSOjiykti.o/pQs.wPvMxQ6Fm7I6IoYN3CmLs66x9t0oSwbtEW7o7UmJEiDwGqd8p4ur1"},
		{"$6$rounds=10$roundstoolow", "the minimum number is still observed", "$6$rounds=1000$roundstoolow$kUMsbe306n21p9R.FRkW3IGn.S9NPN0x50YhH1xhLsPuWGsUSklZt58jaTfF4ZEQpyUNGc0dqbpBYYBaHHrsX."},
	} {
		got, err := sha512Crypt([]byte(v.pw), v.setting)
		if err != nil || got != v.want {
			t.Errorf("%s: %s %v, want %s", v.setting, got, err, v.want)
		}
	}
}

func TestHash(t *testing.T) {
	h, err := Hash("Sunlit-Meadow-47k")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$6$rounds=65000$") || len(strings.Split(h, "$")[3]) != 16 {
		t.Fatalf("hash %q", h)
	}
	if !Verify(h, "Sunlit-Meadow-47k") || Verify(h, "Sunlit-Meadow-47K") {
		t.Fatal("verify")
	}
	// The system's own crypt(3) (through openssl) agrees.
	if _, err := exec.LookPath("openssl"); err == nil {
		parts := strings.Split(h, "$")
		out, err := exec.Command("openssl", "passwd", "-6", "-salt", "rounds=65000$"+parts[3], "Sunlit-Meadow-47k").Output()
		if err == nil && strings.TrimSpace(string(out)) != h {
			t.Fatalf("openssl says %s, LCM %s", out, h)
		}
	}
}
