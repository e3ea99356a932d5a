package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// LinuxUserSettings are a Linux user's changeable fields; nil fields stay.
type LinuxUserSettings struct {
	FullName         *string
	Email            *string
	Shell            *string
	AccountType      *string
	SFTPChroot       *bool
	DefaultProfileID *string // "" clears it
}

func linuxUserOf(r linuxUserRow) domain.LinuxUser {
	u := domain.LinuxUser{ID: r.ID, Username: r.Username, FullName: r.FullName, Email: r.Email, Shell: r.Shell,
		AccountType: r.AccountType, SFTPChroot: r.SFTPChroot, PasswordHash: r.PasswordHash, PasswordSetAt: r.PasswordSetAt,
		Keys: []domain.LinuxUserKey{}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.DefaultProfileID != nil {
		u.DefaultProfileID = *r.DefaultProfileID
	}
	return u
}

func keyOf(r linuxUserKeyRow) domain.LinuxUserKey {
	return domain.LinuxUserKey{ID: r.ID, UserID: r.UserID, Type: r.Type, Bits: r.Bits, Fingerprint: r.Fingerprint,
		Comment: r.Comment, PublicKey: r.PublicKey, CreatedAt: r.CreatedAt}
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CreateLinuxUser stores a new catalogue entry.
func (s *Store) CreateLinuxUser(ctx context.Context, u domain.LinuxUser) (domain.LinuxUser, error) {
	now := time.Now().UTC()
	row := linuxUserRow{ID: uuid.NewString(), Username: u.Username, FullName: u.FullName, Email: u.Email, Shell: u.Shell,
		AccountType: u.AccountType, SFTPChroot: u.SFTPChroot, DefaultProfileID: nilIfEmpty(u.DefaultProfileID), CreatedAt: now, UpdatedAt: now}
	if err := s.conn(ctx).Omit("DefaultProfile").Create(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrForeignKeyViolated) {
			return domain.LinuxUser{}, domain.Invalid("unknown_profile", "the default profile does not exist")
		}
		return domain.LinuxUser{}, mapErr(err, "Linux user "+u.Username)
	}
	return s.GetLinuxUser(ctx, row.ID)
}

// GetLinuxUser returns one Linux user with its keys.
func (s *Store) GetLinuxUser(ctx context.Context, id string) (domain.LinuxUser, error) {
	var row linuxUserRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.LinuxUser{}, mapErr(err, "Linux user")
	}
	out, err := s.decorateLinuxUsers(ctx, []linuxUserRow{row})
	if err != nil {
		return domain.LinuxUser{}, err
	}
	return out[0], nil
}

// ListLinuxUsers returns the catalogue by username.
func (s *Store) ListLinuxUsers(ctx context.Context) ([]domain.LinuxUser, error) {
	var rows []linuxUserRow
	if err := s.conn(ctx).Order("username").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "Linux users")
	}
	return s.decorateLinuxUsers(ctx, rows)
}

func (s *Store) decorateLinuxUsers(ctx context.Context, rows []linuxUserRow) ([]domain.LinuxUser, error) {
	out := make([]domain.LinuxUser, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var keys []linuxUserKeyRow
	if err := s.conn(ctx).Where("user_id IN ?", ids).Order("created_at").Order("id").Find(&keys).Error; err != nil {
		return nil, mapErr(err, "Linux user keys")
	}
	byUser := map[string][]domain.LinuxUserKey{}
	for _, k := range keys {
		byUser[k.UserID] = append(byUser[k.UserID], keyOf(k))
	}
	for i, r := range rows {
		out[i] = linuxUserOf(r)
		if k := byUser[r.ID]; k != nil {
			out[i].Keys = k
		}
	}
	return out, nil
}

// UpdateLinuxUser changes a Linux user's settings.
func (s *Store) UpdateLinuxUser(ctx context.Context, id string, set LinuxUserSettings) (domain.LinuxUser, error) {
	row := linuxUserRow{UpdatedAt: time.Now().UTC()}
	cols := []string{"updated_at"}
	if set.FullName != nil {
		row.FullName, cols = *set.FullName, append(cols, "full_name")
	}
	if set.Email != nil {
		row.Email, cols = *set.Email, append(cols, "email")
	}
	if set.Shell != nil {
		row.Shell, cols = *set.Shell, append(cols, "shell")
	}
	if set.AccountType != nil {
		row.AccountType, cols = *set.AccountType, append(cols, "account_type")
	}
	if set.SFTPChroot != nil {
		row.SFTPChroot, cols = *set.SFTPChroot, append(cols, "sftp_chroot")
	}
	if set.DefaultProfileID != nil {
		row.DefaultProfileID, cols = nilIfEmpty(*set.DefaultProfileID), append(cols, "default_profile_id")
	}
	res := s.conn(ctx).Model(&linuxUserRow{ID: id}).Select(cols).Updates(&row)
	if res.Error != nil {
		if errors.Is(res.Error, gorm.ErrForeignKeyViolated) {
			return domain.LinuxUser{}, domain.Invalid("unknown_profile", "the default profile does not exist")
		}
		return domain.LinuxUser{}, mapErr(res.Error, "Linux user")
	}
	if res.RowsAffected == 0 {
		return domain.LinuxUser{}, domain.NotFound("Linux user")
	}
	return s.GetLinuxUser(ctx, id)
}

// SetLinuxUserPassword stores a crypt hash (encrypted) for a user.
func (s *Store) SetLinuxUserPassword(ctx context.Context, id, hash string) error {
	now := time.Now().UTC()
	res := s.conn(ctx).Model(&linuxUserRow{ID: id}).Select("password_hash", "password_set_at", "updated_at").
		Updates(&linuxUserRow{PasswordHash: hash, PasswordSetAt: &now, UpdatedAt: now})
	if err := mapErr(res.Error, "Linux user"); err != nil {
		return err
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("Linux user")
	}
	return nil
}

// DeleteLinuxUser removes a Linux user with its keys, links and assignments.
func (s *Store) DeleteLinuxUser(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		for _, m := range []any{&linuxUserKeyRow{}, &linuxUserActivationRow{}, &linuxUserAssignmentRow{}} {
			if err := tx.conn(ctx).Where("user_id = ?", id).Delete(m).Error; err != nil {
				return mapErr(err, "Linux user")
			}
		}
		res := tx.conn(ctx).Delete(&linuxUserRow{ID: id})
		if err := mapErr(res.Error, "Linux user"); err != nil {
			return err
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("Linux user")
		}
		return nil
	})
}

// AddLinuxUserKey stores a public key (duplicates by fingerprint conflict).
func (s *Store) AddLinuxUserKey(ctx context.Context, k domain.LinuxUserKey) (domain.LinuxUserKey, error) {
	row := linuxUserKeyRow{ID: uuid.NewString(), UserID: k.UserID, Type: k.Type, Bits: k.Bits, Fingerprint: k.Fingerprint,
		Comment: k.Comment, PublicKey: k.PublicKey, CreatedAt: time.Now().UTC()}
	if err := s.conn(ctx).Omit("User").Create(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrForeignKeyViolated) {
			return domain.LinuxUserKey{}, domain.NotFound("Linux user")
		}
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return domain.LinuxUserKey{}, domain.Conflict("duplicate_key", "the user already has this key")
		}
		return domain.LinuxUserKey{}, mapErr(err, "SSH key")
	}
	return keyOf(row), nil
}

// GetLinuxUserKey returns one key.
func (s *Store) GetLinuxUserKey(ctx context.Context, keyID string) (domain.LinuxUserKey, error) {
	var row linuxUserKeyRow
	if err := s.conn(ctx).Where("id = ?", keyID).Take(&row).Error; err != nil {
		return domain.LinuxUserKey{}, mapErr(err, "SSH key")
	}
	return keyOf(row), nil
}

// DeleteLinuxUserKey removes one key.
func (s *Store) DeleteLinuxUserKey(ctx context.Context, keyID string) error {
	res := s.conn(ctx).Delete(&linuxUserKeyRow{ID: keyID})
	if err := mapErr(res.Error, "SSH key"); err != nil {
		return err
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("SSH key")
	}
	return nil
}

// CreateLinuxUserActivation stores an activation link's token hash.
func (s *Store) CreateLinuxUserActivation(ctx context.Context, userID, tokenHash string, expires time.Time) error {
	row := linuxUserActivationRow{TokenHash: tokenHash, UserID: userID, ExpiresAt: expires.UTC(), CreatedAt: time.Now().UTC()}
	if err := s.conn(ctx).Omit("User").Create(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrForeignKeyViolated) {
			return domain.NotFound("Linux user")
		}
		return mapErr(err, "activation link")
	}
	return nil
}

// ConsumeLinuxUserActivation marks an unexpired, unused link used and
// returns its user id, atomically (a link works once).
func (s *Store) ConsumeLinuxUserActivation(ctx context.Context, tokenHash string, now time.Time) (string, error) {
	var userID string
	err := s.InTx(ctx, func(tx *Store) error {
		var row linuxUserActivationRow
		if err := tx.conn(ctx).Where("token_hash = ?", tokenHash).Take(&row).Error; err != nil {
			return mapErr(err, "activation link")
		}
		if row.UsedAt != nil || !now.Before(row.ExpiresAt) {
			return domain.NotFound("activation link")
		}
		res := tx.conn(ctx).Model(&linuxUserActivationRow{}).Where("token_hash = ? AND used_at IS NULL", tokenHash).Update("used_at", now.UTC())
		if res.Error != nil {
			return mapErr(res.Error, "activation link")
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("activation link")
		}
		userID = row.UserID
		return nil
	})
	return userID, err
}

// ---- assignments ----

func assignmentOf(r linuxUserAssignmentRow) domain.LinuxUserAssignment {
	a := domain.LinuxUserAssignment{ID: r.ID, UserID: r.UserID, TargetType: r.TargetType, TargetID: r.TargetID, CreatedAt: r.CreatedAt}
	if r.ProfileID != nil {
		a.ProfileID = *r.ProfileID
	}
	return a
}

// UpsertLinuxUserAssignment assigns a user to a server or group with a
// profile, replacing the profile of an existing assignment.
func (s *Store) UpsertLinuxUserAssignment(ctx context.Context, a domain.LinuxUserAssignment) (domain.LinuxUserAssignment, error) {
	var out linuxUserAssignmentRow
	err := s.InTx(ctx, func(tx *Store) error {
		var cur linuxUserAssignmentRow
		err := tx.conn(ctx).Where("user_id = ? AND target_type = ? AND target_id = ?", a.UserID, a.TargetType, a.TargetID).Take(&cur).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			out = linuxUserAssignmentRow{ID: uuid.NewString(), UserID: a.UserID, TargetType: a.TargetType, TargetID: a.TargetID,
				ProfileID: nilIfEmpty(a.ProfileID), CreatedAt: time.Now().UTC()}
			err = tx.conn(ctx).Omit("User", "Profile").Create(&out).Error
		case err == nil:
			out = cur
			out.ProfileID = nilIfEmpty(a.ProfileID)
			err = tx.conn(ctx).Model(&linuxUserAssignmentRow{ID: cur.ID}).Select("profile_id").Updates(&linuxUserAssignmentRow{ProfileID: out.ProfileID}).Error
		}
		if errors.Is(err, gorm.ErrForeignKeyViolated) {
			return domain.Invalid("unknown_reference", "the Linux user or the profile does not exist")
		}
		return mapErr(err, "assignment")
	})
	return assignmentOf(out), err
}

// DeleteLinuxUserAssignment removes an assignment.
func (s *Store) DeleteLinuxUserAssignment(ctx context.Context, userID, targetType, targetID string) error {
	res := s.conn(ctx).Where("user_id = ? AND target_type = ? AND target_id = ?", userID, targetType, targetID).Delete(&linuxUserAssignmentRow{})
	if err := mapErr(res.Error, "assignment"); err != nil {
		return err
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("assignment")
	}
	return nil
}

// ListLinuxUserAssignments returns a user's assignments ("" = everyone's).
func (s *Store) ListLinuxUserAssignments(ctx context.Context, userID string) ([]domain.LinuxUserAssignment, error) {
	var rows []linuxUserAssignmentRow
	q := s.conn(ctx).Order("created_at").Order("id")
	if userID != "" {
		q = q.Where("user_id = ?", userID)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, mapErr(err, "assignments")
	}
	out := make([]domain.LinuxUserAssignment, len(rows))
	for i, r := range rows {
		out[i] = assignmentOf(r)
	}
	return out, nil
}

// ProfileUseCount counts the assignments and default profiles naming a
// profile.
func (s *Store) ProfileUseCount(ctx context.Context, profileID string) (int64, error) {
	var a, d int64
	if err := s.conn(ctx).Model(&linuxUserAssignmentRow{}).Where("profile_id = ?", profileID).Count(&a).Error; err != nil {
		return 0, mapErr(err, "assignments")
	}
	if err := s.conn(ctx).Model(&linuxUserRow{}).Where("default_profile_id = ?", profileID).Count(&d).Error; err != nil {
		return 0, mapErr(err, "Linux users")
	}
	return a + d, nil
}

// ---- provisions ----

func provisionOf(r linuxUserProvisionRow) domain.LinuxUserProvision {
	return domain.LinuxUserProvision{UserID: r.UserID, ServerID: r.ServerID, Username: r.Username, ProfileSlug: r.ProfileSlug,
		State: r.State, JobID: r.JobID, Error: r.Error, UpdatedAt: r.UpdatedAt}
}

// SetLinuxUserProvision records a user's state on a server.
func (s *Store) SetLinuxUserProvision(ctx context.Context, p domain.LinuxUserProvision) error {
	row := linuxUserProvisionRow{UserID: p.UserID, ServerID: p.ServerID, Username: p.Username, ProfileSlug: p.ProfileSlug,
		State: p.State, JobID: p.JobID, Error: p.Error, UpdatedAt: time.Now().UTC()}
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.conn(ctx).Where("user_id = ? AND server_id = ?", p.UserID, p.ServerID).Delete(&linuxUserProvisionRow{}).Error; err != nil {
			return mapErr(err, "provision")
		}
		if err := tx.conn(ctx).Omit("Server").Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrForeignKeyViolated) {
				return domain.NotFound("server")
			}
			return mapErr(err, "provision")
		}
		return nil
	})
}

// DeleteLinuxUserProvision forgets a user's account on a server (removed).
func (s *Store) DeleteLinuxUserProvision(ctx context.Context, userID, serverID string) error {
	return mapErr(s.conn(ctx).Where("user_id = ? AND server_id = ?", userID, serverID).Delete(&linuxUserProvisionRow{}).Error, "provision")
}

// ListLinuxUserProvisions returns provisions by user ("" = any) and server
// ("" = any).
func (s *Store) ListLinuxUserProvisions(ctx context.Context, userID, serverID string) ([]domain.LinuxUserProvision, error) {
	var rows []linuxUserProvisionRow
	q := s.conn(ctx).Order("server_id").Order("username")
	if userID != "" {
		q = q.Where("user_id = ?", userID)
	}
	if serverID != "" {
		q = q.Where("server_id = ?", serverID)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, mapErr(err, "provisions")
	}
	out := make([]domain.LinuxUserProvision, len(rows))
	for i, r := range rows {
		out[i] = provisionOf(r)
	}
	return out, nil
}

// PeekLinuxUserActivation returns the user of an unexpired, unused link
// without consuming it.
func (s *Store) PeekLinuxUserActivation(ctx context.Context, tokenHash string, now time.Time) (string, error) {
	var row linuxUserActivationRow
	if err := s.conn(ctx).Where("token_hash = ?", tokenHash).Take(&row).Error; err != nil {
		return "", mapErr(err, "activation link")
	}
	if row.UsedAt != nil || !now.Before(row.ExpiresAt) {
		return "", domain.NotFound("activation link")
	}
	return row.UserID, nil
}

// LinuxUserScan is a server's last account scan.
type LinuxUserScan struct {
	ServerID  string
	Accounts  []byte // JSON
	ScannedAt time.Time
	JobID     string
}

// SetLinuxUserScan stores a server's scan, replacing the previous one.
func (s *Store) SetLinuxUserScan(ctx context.Context, sc LinuxUserScan) error {
	row := linuxUserScanRow{ServerID: sc.ServerID, Accounts: string(sc.Accounts), ScannedAt: sc.ScannedAt.UTC(), JobID: sc.JobID}
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.conn(ctx).Where("server_id = ?", sc.ServerID).Delete(&linuxUserScanRow{}).Error; err != nil {
			return mapErr(err, "scan")
		}
		if err := tx.conn(ctx).Omit("Server").Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrForeignKeyViolated) {
				return domain.NotFound("server")
			}
			return mapErr(err, "scan")
		}
		return nil
	})
}

// GetLinuxUserScan returns a server's last scan (not found: never scanned).
func (s *Store) GetLinuxUserScan(ctx context.Context, serverID string) (LinuxUserScan, error) {
	var row linuxUserScanRow
	if err := s.conn(ctx).Where("server_id = ?", serverID).Take(&row).Error; err != nil {
		return LinuxUserScan{}, mapErr(err, "scan")
	}
	return LinuxUserScan{ServerID: row.ServerID, Accounts: []byte(row.Accounts), ScannedAt: row.ScannedAt, JobID: row.JobID}, nil
}
