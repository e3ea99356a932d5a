package store

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"gorm.io/gorm/schema"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestRegistryPasswordEncrypted: a registry's password is sealed in the
// database, in the rotation registry, and reads back; hosts are unique.
func TestRegistryPasswordEncrypted(t *testing.T) {
	sch, err := schema.Parse(&registryCredentialRow{}, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	reg := map[string]bool{}
	for _, c := range EncryptedColumns() {
		reg[c.AAD()] = true
	}
	for _, f := range sch.Fields {
		if f.TagSettings["SERIALIZER"] == "secret" && !reg[sch.Table+"."+f.DBName] {
			t.Errorf("%s.%s is encrypted but not registered", sch.Table, f.DBName)
		}
	}
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			r, err := s.SaveRegistry(ctx, RegistryCredential{Host: "ghcr.io", Username: "bot", Password: "ghp_SecretToken123"})
			if err != nil {
				t.Fatal(err)
			}
			var raw []byte
			if err := s.db.Raw("SELECT password FROM registry_credentials WHERE id = ?", r.ID).Row().Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if len(raw) == 0 || bytes.Contains(raw, []byte("SecretToken")) {
				t.Fatalf("stored in plaintext: %q", raw)
			}
			got, ok, err := s.RegistryByHost(ctx, "ghcr.io")
			if err != nil || !ok || got.Password != "ghp_SecretToken123" || got.Username != "bot" {
				t.Fatalf("read back: %+v %v %v", got, ok, err)
			}
			if _, err := s.SaveRegistry(ctx, RegistryCredential{Host: "ghcr.io"}); !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("duplicate host: %v", err)
			}
			got.Password = ""
			if got, err = s.SaveRegistry(ctx, got); err != nil || got.Password != "" {
				t.Fatalf("clear password: %+v %v", got, err)
			}
			if err := s.DeleteRegistry(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteRegistry(ctx, r.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("delete twice: %v", err)
			}
		})
	}
}
