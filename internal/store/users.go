package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// User is a login user as the services see it. TOTPSecret is decrypted
// only by GetUser*; lists and the per-request load never touch it.
type User struct {
	ID                 string
	Username           string
	FirstName          string
	LastName           string
	DisplayName        string
	Email              string
	PasswordHash       string
	IsSystem           bool
	Active             bool
	TOTPSecret         string
	TOTPEnabled        bool
	TOTPLastStep       int64
	SessionsValidAfter int64
	Roles              []string
	Permissions        []string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	LastLoginAt        *time.Time
}

func (r userRow) toUser() User {
	return User{ID: r.ID, Username: r.Username, FirstName: r.FirstName, LastName: r.LastName,
		DisplayName: r.DisplayName, Email: r.Email, PasswordHash: r.PasswordHash, IsSystem: r.IsSystem,
		Active: r.Active, TOTPSecret: r.TOTPSecret, TOTPEnabled: r.TOTPEnabled, TOTPLastStep: r.TOTPLastStep,
		SessionsValidAfter: r.SessionsValidAfter, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, LastLoginAt: r.LastLoginAt}
}

// userColumnsNoSecret are the columns read when the TOTP secret is not
// needed, so no decryption runs.
var userColumnsNoSecret = []string{"id", "username", "first_name", "last_name", "display_name", "email",
	"password_hash", "is_system", "active", "totp_enabled", "totp_last_step", "sessions_valid_after",
	"created_at", "updated_at", "last_login_at"}

// GetUser loads a user by id with roles, permissions and the TOTP secret.
func (s *Store) GetUser(ctx context.Context, id string) (User, error) {
	return s.getUser(ctx, "id = ?", id)
}

// GetUserByUsername loads a user by exact username (case-insensitive).
func (s *Store) GetUserByUsername(ctx context.Context, username string) (User, error) {
	return s.getUser(ctx, "lower(username) = ?", strings.ToLower(username))
}

// FindUserByLogin loads a user by username or e-mail (case-insensitive).
func (s *Store) FindUserByLogin(ctx context.Context, login string) (User, error) {
	l := strings.ToLower(login)
	return s.getUser(ctx, "lower(username) = ? OR (email <> '' AND lower(email) = ?)", l, l)
}

func (s *Store) getUser(ctx context.Context, where string, args ...any) (User, error) {
	var rows []userRow
	if err := s.conn(ctx).Where(where, args...).Order("created_at").Limit(1).Find(&rows).Error; err != nil {
		return User{}, fmt.Errorf("store: load user: %w", err)
	}
	if len(rows) == 0 {
		return User{}, domain.NotFound("user")
	}
	u := rows[0].toUser()
	if err := s.fillRoles(ctx, []*User{&u}); err != nil {
		return User{}, err
	}
	return u, nil
}

// ListUsers returns every user (without TOTP secrets) ordered by username.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	var rows []userRow
	if err := s.conn(ctx).Select(userColumnsNoSecret).Order("username").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list users: %w", err)
	}
	out := make([]User, len(rows))
	ptrs := make([]*User, len(rows))
	for i, r := range rows {
		out[i] = r.toUser()
		ptrs[i] = &out[i]
	}
	return out, s.fillRoles(ctx, ptrs)
}

func (s *Store) fillRoles(ctx context.Context, users []*User) error {
	if len(users) == 0 {
		return nil
	}
	byID := map[string]*User{}
	ids := make([]string, 0, len(users))
	for _, u := range users {
		byID[u.ID] = u
		ids = append(ids, u.ID)
	}
	type rp struct {
		UserID string
		Name   string
		Code   *string
	}
	var rows []rp
	err := s.conn(ctx).Raw(`SELECT ur.user_id AS user_id, r.name AS name, rp.permission_code AS code
		FROM user_roles ur JOIN roles r ON r.id = ur.role_id
		LEFT JOIN role_permissions rp ON rp.role_id = r.id
		WHERE ur.user_id IN ?`, ids).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("store: load roles: %w", err)
	}
	seenRole := map[string]bool{}
	seenPerm := map[string]bool{}
	for _, r := range rows {
		u := byID[r.UserID]
		if k := r.UserID + "\x00" + r.Name; !seenRole[k] {
			seenRole[k] = true
			u.Roles = append(u.Roles, r.Name)
		}
		if r.Code != nil {
			if k := r.UserID + "\x00" + *r.Code; !seenPerm[k] {
				seenPerm[k] = true
				u.Permissions = append(u.Permissions, *r.Code)
			}
		}
	}
	for _, u := range users {
		sort.Strings(u.Roles)
		sort.Strings(u.Permissions)
		if u.Roles == nil {
			u.Roles = []string{}
		}
		if u.Permissions == nil {
			u.Permissions = []string{}
		}
	}
	return nil
}

// AuthUser is the per-request view of a user: everything a request needs
// to decide access, loaded in one query.
type AuthUser struct {
	ID                 string
	Username           string
	Active             bool
	IsSystem           bool
	TOTPEnabled        bool
	SessionsValidAfter int64
	Roles              []string
	Permissions        map[string]bool
}

// LoadAuthUser loads a user with roles and permissions in one query (the
// hot path of every authenticated request).
func (s *Store) LoadAuthUser(ctx context.Context, id string) (AuthUser, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return AuthUser{}, err
	}
	q := `SELECT u.username, u.active, u.is_system, u.totp_enabled, u.sessions_valid_after, r.name, rp.permission_code
		FROM users u
		LEFT JOIN user_roles ur ON ur.user_id = u.id
		LEFT JOIN roles r ON r.id = ur.role_id
		LEFT JOIN role_permissions rp ON rp.role_id = r.id
		WHERE u.id = $1`
	if s.dialect == SQLite {
		q = strings.Replace(q, "$1", "?", 1)
	}
	rows, err := sqlDB.QueryContext(ctx, q, id)
	if err != nil {
		return AuthUser{}, fmt.Errorf("store: load user: %w", err)
	}
	defer rows.Close()
	u := AuthUser{ID: id, Permissions: map[string]bool{}}
	found := false
	for rows.Next() {
		var role, perm *string
		if err := rows.Scan(&u.Username, &u.Active, &u.IsSystem, &u.TOTPEnabled, &u.SessionsValidAfter, &role, &perm); err != nil {
			return AuthUser{}, fmt.Errorf("store: load user: %w", err)
		}
		found = true
		if role != nil && (len(u.Roles) == 0 || u.Roles[len(u.Roles)-1] != *role) && !idContains(u.Roles, *role) {
			u.Roles = append(u.Roles, *role)
		}
		if perm != nil {
			u.Permissions[*perm] = true
		}
	}
	if err := rows.Err(); err != nil {
		return AuthUser{}, fmt.Errorf("store: load user: %w", err)
	}
	if !found {
		return AuthUser{}, domain.NotFound("user")
	}
	return u, nil
}

func idContains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// NewUser is the input of CreateUser.
type NewUser struct {
	Username     string
	FirstName    string
	LastName     string
	DisplayName  string
	Email        string
	PasswordHash string
	Active       bool
	Roles        []string
}

// CreateUser inserts a user with roles (by name). A taken username is a
// conflict; an unknown role is invalid.
func (s *Store) CreateUser(ctx context.Context, n NewUser) (User, error) {
	now := time.Now().UTC()
	row := userRow{ID: uuid.NewString(), Username: n.Username, FirstName: n.FirstName, LastName: n.LastName,
		DisplayName: n.DisplayName, Email: n.Email, PasswordHash: n.PasswordHash, Active: n.Active,
		CreatedAt: now, UpdatedAt: now}
	err := s.InTx(ctx, func(tx *Store) error {
		var n64 int64
		if err := tx.conn(ctx).Model(&userRow{}).Where("lower(username) = ?", strings.ToLower(row.Username)).Count(&n64).Error; err != nil {
			return err
		}
		if n64 > 0 {
			return domain.Conflict("username_taken", "a user with this username already exists")
		}
		if err := tx.conn(ctx).Create(&row).Error; err != nil {
			return mapErr(err, "user")
		}
		return tx.setRoles(ctx, row.ID, n.Roles)
	})
	if err != nil {
		return User{}, err
	}
	return s.GetUser(ctx, row.ID)
}

// SetUserRoles replaces a user's roles (by name).
func (s *Store) SetUserRoles(ctx context.Context, userID string, roles []string) error {
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.existsUser(ctx, userID); err != nil {
			return err
		}
		if err := tx.conn(ctx).Where("user_id = ?", userID).Delete(&userRoleRow{}).Error; err != nil {
			return err
		}
		return tx.setRoles(ctx, userID, roles)
	})
}

func (s *Store) existsUser(ctx context.Context, id string) error {
	var n int64
	if err := s.conn(ctx).Model(&userRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return domain.NotFound("user")
	}
	return nil
}

func (s *Store) setRoles(ctx context.Context, userID string, roles []string) error {
	seen := map[string]bool{}
	for _, name := range roles {
		if seen[name] {
			continue
		}
		seen[name] = true
		var r []roleRow
		if err := s.conn(ctx).Where("name = ?", name).Limit(1).Find(&r).Error; err != nil {
			return err
		}
		if len(r) == 0 {
			return &domain.Error{Kind: domain.ErrInvalid, Code: "unknown_role", Message: fmt.Sprintf("unknown role %q", name)}
		}
		if err := s.conn(ctx).Create(&userRoleRow{UserID: userID, RoleID: r[0].ID}).Error; err != nil {
			return mapErr(err, "role assignment")
		}
	}
	return nil
}

// UserUpdate lists the fields UpdateUser changes; nil fields stay.
type UserUpdate struct {
	FirstName, LastName, DisplayName, Email *string
	PasswordHash                            *string
	Active                                  *bool
	TOTPSecret                              *string
	TOTPEnabled                             *bool
	SessionsValidAfter                      *int64
	LastLoginAt                             *time.Time
}

// UpdateUser changes the given fields of a user.
func (s *Store) UpdateUser(ctx context.Context, id string, u UserUpdate) error {
	m := map[string]any{"updated_at": time.Now().UTC()}
	set := func(col string, v any, ok bool) {
		if ok {
			m[col] = v
		}
	}
	if u.FirstName != nil {
		set("first_name", *u.FirstName, true)
	}
	if u.LastName != nil {
		set("last_name", *u.LastName, true)
	}
	if u.DisplayName != nil {
		set("display_name", *u.DisplayName, true)
	}
	if u.Email != nil {
		set("email", *u.Email, true)
	}
	if u.PasswordHash != nil {
		set("password_hash", *u.PasswordHash, true)
	}
	if u.Active != nil {
		set("active", *u.Active, true)
	}
	if u.TOTPEnabled != nil {
		set("totp_enabled", *u.TOTPEnabled, true)
	}
	if u.SessionsValidAfter != nil {
		set("sessions_valid_after", *u.SessionsValidAfter, true)
	}
	if u.LastLoginAt != nil {
		set("last_login_at", *u.LastLoginAt, true)
	}
	db := s.conn(ctx).Model(&userRow{ID: id})
	if u.TOTPSecret != nil {
		// Through the model so the secret serializer encrypts it.
		row := userRow{ID: id, TOTPSecret: *u.TOTPSecret}
		cols := []string{"totp_secret"}
		if err := s.conn(ctx).Model(&row).Select(cols).Updates(&row).Error; err != nil {
			return mapErr(err, "user")
		}
		if *u.TOTPSecret == "" {
			if err := s.conn(ctx).Exec("UPDATE users SET totp_secret = NULL WHERE id = ?", id).Error; err != nil {
				return mapErr(err, "user")
			}
		}
	}
	res := db.Where("id = ?", id).Updates(m)
	if res.Error != nil {
		return mapErr(res.Error, "user")
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("user")
	}
	return nil
}

// AdvanceTOTPStep records step as the user's last used TOTP step, only if
// it is newer than the stored one (atomic across replicas). It reports
// false when another request used this or a later step first (replay).
func (s *Store) AdvanceTOTPStep(ctx context.Context, id string, step int64) (bool, error) {
	res := s.conn(ctx).Model(&userRow{}).Where("id = ? AND totp_last_step < ?", id, step).
		Update("totp_last_step", step)
	if res.Error != nil {
		return false, fmt.Errorf("store: totp step: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// DeleteUser removes a user (roles, API keys and tokens cascade). The
// system user cannot be deleted.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		var rows []userRow
		if err := tx.conn(ctx).Select("id", "is_system").Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return domain.NotFound("user")
		}
		if rows[0].IsSystem {
			return domain.Forbidden("the system user cannot be deleted")
		}
		for _, m := range []any{&userRoleRow{}, &apiKeyRow{}, &authTokenRow{}, &recoveryCodeRow{}} {
			if err := tx.conn(ctx).Where("user_id = ?", id).Delete(m).Error; err != nil {
				return err
			}
		}
		return tx.conn(ctx).Where("id = ?", id).Delete(&userRow{}).Error
	})
}

// Role is a role with its permission codes.
type Role struct {
	ID          string
	Name        string
	Permissions []string
}

// ListRoles returns every role with its permissions, ordered by name.
func (s *Store) ListRoles(ctx context.Context) ([]Role, error) {
	var roles []roleRow
	if err := s.conn(ctx).Order("name").Find(&roles).Error; err != nil {
		return nil, fmt.Errorf("store: list roles: %w", err)
	}
	var rps []rolePermissionRow
	if err := s.conn(ctx).Order("permission_code").Find(&rps).Error; err != nil {
		return nil, fmt.Errorf("store: list roles: %w", err)
	}
	perms := map[string][]string{}
	for _, rp := range rps {
		perms[rp.RoleID] = append(perms[rp.RoleID], rp.PermissionCode)
	}
	out := make([]Role, len(roles))
	for i, r := range roles {
		p := perms[r.ID]
		if p == nil {
			p = []string{}
		}
		out[i] = Role{ID: r.ID, Name: r.Name, Permissions: p}
	}
	return out, nil
}

// UnknownRoles returns the names in names that are not roles.
func (s *Store) UnknownRoles(ctx context.Context, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var found []string
	if err := s.conn(ctx).Model(&roleRow{}).Where("name IN ?", names).Pluck("name", &found).Error; err != nil {
		return nil, fmt.Errorf("store: roles: %w", err)
	}
	var unknown []string
	for _, n := range names {
		if !idContains(found, n) {
			unknown = append(unknown, n)
		}
	}
	return unknown, nil
}

// ErrNoRows reports whether err is a not-found error (for callers that
// want to branch without importing gorm).
func ErrNoRows(err error) bool {
	return errors.Is(err, domain.ErrNotFound) || errors.Is(err, gorm.ErrRecordNotFound)
}
