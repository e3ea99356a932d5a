package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lcmproject/lcm/internal/domain"
)

// SeedResult reports what seeding created.
type SeedResult struct {
	// AdminCreated is true only on the start that created the admin user;
	// the caller prints the generated password then, and never again.
	AdminCreated bool
}

// SeedIdentity creates, idempotently, every permission, the roles admin
// (all permissions) and manager (its fixed set), the system user (which has
// no password and can never log in with one) and the admin user with the
// given password hash — only if no admin user exists yet.
func (s *Store) SeedIdentity(ctx context.Context, adminPasswordHash func() (string, error)) (SeedResult, error) {
	var res SeedResult
	err := s.InTx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		for _, code := range domain.AllPermissions {
			if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&permissionRow{Code: code}).Error; err != nil {
				return err
			}
		}
		roles := map[string][]string{domain.RoleAdmin: domain.AllPermissions, domain.RoleManager: domain.ManagerPermissions}
		roleIDs := map[string]string{}
		for _, name := range []string{domain.RoleAdmin, domain.RoleManager} {
			id, err := ensureRole(db, name)
			if err != nil {
				return err
			}
			roleIDs[name] = id
			// admin always holds every permission, also ones added by a
			// later version; manager's set is fixed by the spec.
			for _, code := range roles[name] {
				if err := db.Clauses(clause.OnConflict{DoNothing: true}).
					Create(&rolePermissionRow{RoleID: id, PermissionCode: code}).Error; err != nil {
					return err
				}
			}
		}
		now := time.Now().UTC()
		sys := userRow{ID: uuid.NewString(), Username: domain.SystemUsername, DisplayName: "System",
			IsSystem: true, Active: true, CreatedAt: now, UpdatedAt: now}
		if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&sys).Error; err != nil {
			return err
		}
		var admin userRow
		err := db.Where("username = ?", "admin").First(&admin).Error
		if err == nil {
			return nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		hash, err := adminPasswordHash()
		if err != nil {
			return err
		}
		admin = userRow{ID: uuid.NewString(), Username: "admin", DisplayName: "Administrator",
			PasswordHash: hash, Active: true, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&admin).Error; err != nil {
			return err
		}
		res.AdminCreated = true
		return db.Create(&userRoleRow{UserID: admin.ID, RoleID: roleIDs[domain.RoleAdmin]}).Error
	})
	if err != nil {
		return res, fmt.Errorf("store: seed: %w", err)
	}
	return res, nil
}

func ensureRole(db *gorm.DB, name string) (string, error) {
	var r roleRow
	err := db.Where("name = ?", name).First(&r).Error
	if err == nil {
		return r.ID, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return "", err
	}
	r = roleRow{ID: uuid.NewString(), Name: name, CreatedAt: time.Now().UTC()}
	if err := db.Create(&r).Error; err != nil {
		return "", err
	}
	return r.ID, nil
}
