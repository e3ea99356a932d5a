package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/lcmproject/lcm/internal/domain"
)

// RegistryCredential is a stored container registry: its host (as image
// references name it, Docker Hub normalised to registry-1.docker.io), the
// user name and the password or access token (decrypted here, encrypted
// in the table), and whether it speaks plain HTTP.
type RegistryCredential struct {
	ID        string
	Host      string
	Username  string
	Password  string
	PlainHTTP bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

func registryOf(r registryCredentialRow) RegistryCredential {
	return RegistryCredential{ID: r.ID, Host: r.Host, Username: r.Username, Password: r.Password, PlainHTTP: r.PlainHTTP,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// ListRegistries returns every stored registry, by host.
func (s *Store) ListRegistries(ctx context.Context) ([]RegistryCredential, error) {
	var rows []registryCredentialRow
	if err := s.conn(ctx).Order("host").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "registries")
	}
	out := make([]RegistryCredential, len(rows))
	for i, r := range rows {
		out[i] = registryOf(r)
	}
	return out, nil
}

// GetRegistry returns one registry by id.
func (s *Store) GetRegistry(ctx context.Context, id string) (RegistryCredential, error) {
	var r registryCredentialRow
	if err := s.conn(ctx).Where("id = ?", id).First(&r).Error; err != nil {
		return RegistryCredential{}, mapErr(err, "registry")
	}
	return registryOf(r), nil
}

// RegistryByHost returns the registry stored for host; false when none.
func (s *Store) RegistryByHost(ctx context.Context, host string) (RegistryCredential, bool, error) {
	var rows []registryCredentialRow
	if err := s.conn(ctx).Where("host = ?", host).Limit(1).Find(&rows).Error; err != nil {
		return RegistryCredential{}, false, mapErr(err, "registry")
	}
	if len(rows) == 0 {
		return RegistryCredential{}, false, nil
	}
	return registryOf(rows[0]), true, nil
}

// SaveRegistry inserts (empty ID) or replaces a registry and returns it. A
// second registry with the same host is a conflict.
func (s *Store) SaveRegistry(ctx context.Context, c RegistryCredential) (RegistryCredential, error) {
	now := time.Now().UTC()
	row := registryCredentialRow{ID: c.ID, Host: c.Host, Username: c.Username, Password: c.Password, PlainHTTP: c.PlainHTTP,
		CreatedAt: c.CreatedAt, UpdatedAt: now}
	db := s.conn(ctx)
	if row.ID == "" {
		row.ID, row.CreatedAt = uuid.NewString(), now
		if err := db.Create(&row).Error; err != nil {
			return RegistryCredential{}, mapErr(err, "registry")
		}
		return registryOf(row), nil
	}
	res := db.Model(&row).Select("*").Omit("id", "created_at").Where("id = ?", row.ID).Updates(&row)
	if res.Error != nil {
		return RegistryCredential{}, mapErr(res.Error, "registry")
	}
	if res.RowsAffected == 0 {
		return RegistryCredential{}, domain.NotFound("registry")
	}
	return s.GetRegistry(ctx, row.ID)
}

// DeleteRegistry removes a registry.
func (s *Store) DeleteRegistry(ctx context.Context, id string) error {
	res := s.conn(ctx).Where("id = ?", id).Delete(&registryCredentialRow{})
	if res.Error != nil {
		return mapErr(res.Error, "registry")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("registry")
	}
	return nil
}
