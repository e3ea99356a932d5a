package store

import (
	"bytes"
	"context"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestLinuxUserPasswordEncrypted: the password hash is sealed in the
// database (never the crypt string itself) and reads back.
func TestLinuxUserPasswordEncrypted(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			u, err := s.CreateLinuxUser(ctx, domain.LinuxUser{Username: "alice", AccountType: domain.AccountFull, Shell: "/bin/bash"})
			if err != nil {
				t.Fatal(err)
			}
			const hash = "$6$rounds=65000$abcdefghijklmnop$IfK/dXArXxf9gj9uXS1U.7oVsPx1m9y8MYSZTYCAyN3/25EnV0ksxluBKutGXIj3NY9olRENhz8eD3m0HVneR."
			if err := s.SetLinuxUserPassword(ctx, u.ID, hash); err != nil {
				t.Fatal(err)
			}
			var raw []byte
			if err := s.db.Raw("SELECT password_hash FROM linux_users WHERE id = ?", u.ID).Row().Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if len(raw) == 0 || bytes.Contains(raw, []byte("$6$")) || bytes.Contains(raw, []byte("abcdefghijklmnop")) {
				t.Fatalf("stored in plaintext: %q", raw)
			}
			got, err := s.GetLinuxUser(ctx, u.ID)
			if err != nil || got.PasswordHash != hash {
				t.Fatalf("read back: %v", err)
			}
		})
	}
}
