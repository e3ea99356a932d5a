package password

import (
	"strings"
	"testing"
)

func BenchmarkCheck(b *testing.B) {
	for name, pw := range map[string]string{
		"good12":     good,
		"digits200":  strings.Repeat("8", 200),
		"letters200": strings.Repeat("Passw0rd", 25),
		"mixed200":   strings.Repeat("1!a", 66) + "xy",
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				Check(pw, Identity{Username: "jdoe", Email: "j.doe@example.com"})
			}
		})
	}
}
