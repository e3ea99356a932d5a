package auth

import (
	"context"
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// usernamePattern: 1–64 characters, letters, digits and . _ @ -, starting
// with a letter or digit. Why: user names appear in logs, audit entries
// and e-mails; nothing that needs quoting.
var usernamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// NewUserInput is the input of CreateUser.
type NewUserInput struct {
	Username  string
	FirstName string
	LastName  string
	Email     string
	Password  string
	Roles     []string
}

// ProfilePatch changes the fields that are set.
type ProfilePatch struct {
	FirstName   *string
	LastName    *string
	Email       *string
	DisplayName *string
}

func validName(field, v string, max int) error {
	if utf8.RuneCountInString(v) > max || hasControl(v) || !utf8.ValidString(v) {
		return domain.Invalid("invalid_"+field, field+" must be at most "+itoa(max)+" printable characters")
	}
	return nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// ValidEmail accepts an empty value or one plain address.
func ValidEmail(v string) error {
	if v == "" {
		return nil
	}
	a, err := mail.ParseAddress(v)
	if err != nil || a.Address != v || len(v) > 254 || !strings.Contains(v[strings.LastIndexByte(v, '@'):], ".") {
		return domain.Invalid("invalid_email", "email must be a plain address like name@example.com")
	}
	return nil
}

func identity(u store.User) password.Identity {
	return password.Identity{Username: u.Username, FirstName: u.FirstName, LastName: u.LastName, Email: u.Email}
}

// CreateUser creates a user. With a password (checked by the policy) the
// account is ready; without one an invitation e-mail with an activation
// link goes to the address, which is then required.
func (s *Service) CreateUser(ctx context.Context, actor *domain.Principal, in NewUserInput) (store.User, error) {
	in.Username = strings.TrimSpace(in.Username)
	in.Email = strings.TrimSpace(in.Email)
	if !usernamePattern.MatchString(in.Username) {
		return store.User{}, domain.Invalid("invalid_username", "username must be 1-64 letters, digits or . _ @ -, starting with a letter or digit")
	}
	if strings.EqualFold(in.Username, domain.SystemUsername) {
		return store.User{}, domain.Conflict("username_taken", "a user with this username already exists")
	}
	for f, v := range map[string]string{"first_name": in.FirstName, "last_name": in.LastName} {
		if err := validName(f, v, 128); err != nil {
			return store.User{}, err
		}
	}
	if err := ValidEmail(in.Email); err != nil {
		return store.User{}, err
	}
	nu := store.NewUser{Username: in.Username, FirstName: in.FirstName, LastName: in.LastName, Email: in.Email,
		Active: true, Roles: dedupe(in.Roles)}
	if in.Password != "" {
		if err := password.Validate(in.Password, password.Identity{Username: in.Username, FirstName: in.FirstName, LastName: in.LastName, Email: in.Email}); err != nil {
			return store.User{}, err
		}
		h, err := s.hasher.Hash(ctx, in.Password)
		if err != nil {
			return store.User{}, err
		}
		nu.PasswordHash = h
	} else {
		if in.Email == "" {
			return store.User{}, domain.Invalid("email_required", "without a password an invitation is e-mailed, so email is required")
		}
		if !s.mail.Configured(ctx) {
			return store.User{}, domain.Unavailable("smtp_not_configured", "no SMTP server is configured for invitations; set a password instead")
		}
	}
	u, err := s.st.CreateUser(ctx, nu)
	if err != nil {
		return store.User{}, err
	}
	s.audit(ctx, actor, "user.created", u.Username, map[string]any{"user_id": u.ID, "roles": u.Roles, "invited": in.Password == ""})
	if in.Password == "" {
		if _, err := s.sendLink(ctx, actor, u, kindActivation); err != nil {
			return u, err
		}
	}
	return u, nil
}

// GetUser returns a user.
func (s *Service) GetUser(ctx context.Context, id string) (store.User, error) {
	return s.st.GetUser(ctx, id)
}

// ListUsers returns every user.
func (s *Service) ListUsers(ctx context.Context) ([]store.User, error) { return s.st.ListUsers(ctx) }

// ListRoles returns every role with its permissions.
func (s *Service) ListRoles(ctx context.Context) ([]store.Role, error) { return s.st.ListRoles(ctx) }

// UpdateProfile changes names and e-mail of a user: the caller's own, or
// anyone's with users:write.
func (s *Service) UpdateProfile(ctx context.Context, actor *domain.Principal, id string, p ProfilePatch) (store.User, error) {
	if id != actor.UserID && !actor.Can(domain.PermUsersWrite) {
		return store.User{}, domain.Forbidden("you may change only your own profile")
	}
	u, err := s.st.GetUser(ctx, id)
	if err != nil {
		return store.User{}, err
	}
	if u.IsSystem {
		return store.User{}, domain.Forbidden("the system user cannot be changed")
	}
	for f, v := range map[string]*string{"first_name": p.FirstName, "last_name": p.LastName, "display_name": p.DisplayName} {
		if v != nil {
			*v = strings.TrimSpace(*v)
			if err := validName(f, *v, 128); err != nil {
				return store.User{}, err
			}
		}
	}
	if p.Email != nil {
		*p.Email = strings.TrimSpace(*p.Email)
		if err := ValidEmail(*p.Email); err != nil {
			return store.User{}, err
		}
	}
	if err := s.st.UpdateUser(ctx, id, store.UserUpdate{FirstName: p.FirstName, LastName: p.LastName, Email: p.Email, DisplayName: p.DisplayName}); err != nil {
		return store.User{}, err
	}
	s.audit(ctx, actor, "user.profile_changed", u.Username, map[string]any{"user_id": id})
	return s.st.GetUser(ctx, id)
}

// PasswordChange is the input of ChangePassword.
type PasswordChange struct {
	Password        string
	CurrentPassword string
	Code            string
}

// ChangePassword sets a new password. For one's own account the current
// password (and a TOTP code with 2FA, on the shared counter) is required,
// whatever permissions the caller holds; for another account users:write.
// Every session of the account ends.
func (s *Service) ChangePassword(ctx context.Context, actor *domain.Principal, id string, in PasswordChange) error {
	self := id == actor.UserID
	if !self && !actor.Can(domain.PermUsersWrite) {
		return domain.Forbidden("you may change only your own password")
	}
	u, err := s.st.GetUser(ctx, id)
	if err != nil {
		return err
	}
	if u.IsSystem {
		return domain.Forbidden("the system user has no password")
	}
	if in.Password == "" {
		return domain.Invalid("missing_field", "password is required")
	}
	if err := password.Validate(in.Password, identity(u)); err != nil {
		return err
	}
	if self {
		if in.CurrentPassword == "" {
			return domain.Invalid("missing_field", "current_password is required to change your own password")
		}
		ok, _, err := s.limiter.Attempt(ctx, clientIPOf(ctx), u.Username, func() (bool, error) {
			if u.PasswordHash == "" {
				return false, s.hasher.VerifyDummy(ctx, in.CurrentPassword)
			}
			return s.hasher.Verify(ctx, u.PasswordHash, in.CurrentPassword)
		})
		if err != nil {
			return err
		}
		if !ok {
			s.audit(ctx, actor, "user.password_change_failed", u.Username, nil)
			return &domain.Error{Kind: domain.ErrForbidden, Code: "wrong_password", Message: "the current password is wrong"}
		}
		if u.TOTPEnabled {
			if in.Code == "" {
				return domain.Invalid("code_required", "a two-factor code is required")
			}
			if err := s.checkTOTP(ctx, u, in.Code, "password_change"); err != nil {
				return err
			}
		}
	}
	if err := s.setPassword(ctx, u, in.Password); err != nil {
		return err
	}
	s.audit(ctx, actor, "user.password_changed", u.Username, map[string]any{"user_id": id, "self": self})
	return nil
}

func (s *Service) setPassword(ctx context.Context, u store.User, pw string) error {
	h, err := s.hasher.Hash(ctx, pw)
	if err != nil {
		return err
	}
	after := s.now().UnixMilli() + 1
	return s.st.UpdateUser(ctx, u.ID, store.UserUpdate{PasswordHash: &h, SessionsValidAfter: &after})
}

// SetRoles replaces a user's roles. The last active admin keeps the role.
func (s *Service) SetRoles(ctx context.Context, actor *domain.Principal, id string, roles []string) (store.User, error) {
	u, err := s.st.GetUser(ctx, id)
	if err != nil {
		return store.User{}, err
	}
	if u.IsSystem {
		return store.User{}, domain.Forbidden("the system user's roles cannot be changed")
	}
	roles = dedupe(roles)
	if unknown, err := s.st.UnknownRoles(ctx, roles); err != nil {
		return store.User{}, err
	} else if len(unknown) > 0 {
		return store.User{}, &domain.Error{Kind: domain.ErrInvalid, Code: "unknown_role", Message: "unknown role " + strings.Join(quoteAll(unknown), ", "), Details: unknown}
	}
	if hasRole(u.Roles, domain.RoleAdmin) && !hasRole(roles, domain.RoleAdmin) {
		if err := s.keepOneAdmin(ctx, id); err != nil {
			return store.User{}, err
		}
	}
	if err := s.st.SetUserRoles(ctx, id, roles); err != nil {
		return store.User{}, err
	}
	s.audit(ctx, actor, "user.roles_changed", u.Username, map[string]any{"user_id": id, "from": u.Roles, "to": roles})
	return s.st.GetUser(ctx, id)
}

func hasRole(roles []string, r string) bool {
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}

// keepOneAdmin refuses a change that would leave no active admin besides
// the user being changed.
func (s *Service) keepOneAdmin(ctx context.Context, exceptID string) error {
	users, err := s.st.ListUsers(ctx)
	if err != nil {
		return err
	}
	for _, o := range users {
		if o.ID != exceptID && o.Active && !o.IsSystem && hasRole(o.Roles, domain.RoleAdmin) {
			return nil
		}
	}
	return domain.Conflict("last_admin", "this is the last active admin; make another user admin first")
}

// SetActive activates or deactivates a user; deactivation ends its
// sessions and stops its API keys at once.
func (s *Service) SetActive(ctx context.Context, actor *domain.Principal, id string, active bool) (store.User, error) {
	u, err := s.st.GetUser(ctx, id)
	if err != nil {
		return store.User{}, err
	}
	if u.IsSystem {
		return store.User{}, domain.Forbidden("the system user cannot be changed")
	}
	if !active && id == actor.UserID {
		return store.User{}, domain.Conflict("cannot_deactivate_self", "you cannot deactivate your own account")
	}
	if !active && hasRole(u.Roles, domain.RoleAdmin) {
		if err := s.keepOneAdmin(ctx, id); err != nil {
			return store.User{}, err
		}
	}
	upd := store.UserUpdate{Active: &active}
	if !active {
		after := s.now().UnixMilli() + 1
		upd.SessionsValidAfter = &after
	}
	if err := s.st.UpdateUser(ctx, id, upd); err != nil {
		return store.User{}, err
	}
	action := "user.activated"
	if !active {
		action = "user.deactivated"
	}
	s.audit(ctx, actor, action, u.Username, map[string]any{"user_id": id})
	return s.st.GetUser(ctx, id)
}

// DeleteUser removes a user (not oneself, not the system user, not the
// last admin).
func (s *Service) DeleteUser(ctx context.Context, actor *domain.Principal, id string) error {
	u, err := s.st.GetUser(ctx, id)
	if err != nil {
		return err
	}
	if id == actor.UserID {
		return domain.Conflict("cannot_delete_self", "you cannot delete your own account")
	}
	if u.IsSystem {
		return domain.Forbidden("the system user cannot be deleted")
	}
	if hasRole(u.Roles, domain.RoleAdmin) {
		if err := s.keepOneAdmin(ctx, id); err != nil {
			return err
		}
	}
	if err := s.st.DeleteUser(ctx, id); err != nil {
		return err
	}
	s.audit(ctx, actor, "user.deleted", u.Username, map[string]any{"user_id": id})
	return nil
}

// UpdateOwnProfile is spec part 2's POST /profile/update.
func (s *Service) UpdateOwnProfile(ctx context.Context, actor *domain.Principal, displayName, email string) (store.User, error) {
	return s.UpdateProfile(ctx, actor, actor.UserID, ProfilePatch{DisplayName: &displayName, Email: &email})
}
