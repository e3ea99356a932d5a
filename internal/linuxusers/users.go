package linuxusers

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/mail"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/privilege"
	"github.com/lcmproject/lcm/internal/shacrypt"
	"github.com/lcmproject/lcm/internal/store"
)

// usernameRe is the portable POSIX user name LCM accepts: a lower-case
// letter or _, then lower-case letters, digits, _ and -; at most 32.
var usernameRe = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// reservedNames are system and distribution accounts a person may never
// take over (and LCM's own management user).
var reservedNames = map[string]bool{
	"root": true, "daemon": true, "bin": true, "sys": true, "sync": true, "games": true, "man": true, "lp": true,
	"mail": true, "news": true, "uucp": true, "proxy": true, "www-data": true, "backup": true, "list": true, "irc": true,
	"gnats": true, "nobody": true, "nogroup": true, "_apt": true, "messagebus": true, "sshd": true, "adm": true,
	"sudo": true, "wheel": true, "admin": true, "operator": true, "halt": true, "shutdown": true, "ftp": true,
	"postgres": true, "mysql": true, "nginx": true, "apache": true, "polkitd": true, "dbus": true, "tss": true,
	"chrony": true, "ntp": true, "postfix": true, "dnsmasq": true, "avahi": true, "rpc": true, "rpcuser": true,
	"nfsnobody": true, "docker": true, "ubuntu": true, "debian": true, "centos": true, "fedora": true,
	"ec2-user": true, "cloud-user": true, "vagrant": true, "git": true, "uuidd": true, "tcpdump": true,
	"landscape": true, "pollinate": true, "syslog": true, "usbmux": true, "lxd": true, "fwupd-refresh": true,
	domain.ManagementUser: true,
}

// reservedPrefixes: systemd's dynamic users, LCM's own accounts and groups.
var reservedPrefixes = []string{"systemd-", "lcm", "_"}

// CheckUsername validates a Linux user name.
func CheckUsername(u string) error {
	if !usernameRe.MatchString(u) {
		return domain.Invalid("invalid_username", "the user name must start with a lower-case letter or _, then lower-case letters, digits, _ or - (at most 32)")
	}
	if reservedNames[u] {
		return domain.Invalid("reserved_username", fmt.Sprintf("%q is a system account name", u))
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(u, p) {
			return domain.Invalid("reserved_username", fmt.Sprintf("user names starting with %q are reserved", p))
		}
	}
	return nil
}

// Shells a full account may have; file-access accounts get nologin.
var allowedShells = map[string]bool{"/bin/bash": true, "/usr/bin/bash": true, "/bin/sh": true, "/bin/dash": true,
	"/bin/zsh": true, "/usr/bin/zsh": true, "/usr/bin/fish": true}

// NologinShell is the shell of a file-access-only account.
const NologinShell = "/usr/sbin/nologin"

// DefaultShell is a full account's shell when none is given.
const DefaultShell = "/bin/bash"

// UserInput is a Linux user's fields; nil fields stay.
type UserInput struct {
	Username         string
	FullName         *string
	Email            *string
	Shell            *string
	AccountType      *string
	SFTPChroot       *bool
	DefaultProfileID *string
}

func (s *Service) checkUserFields(ctx context.Context, u *domain.LinuxUser, in UserInput) error {
	if in.FullName != nil {
		if len(*in.FullName) > 128 || strings.ContainsAny(*in.FullName, ":,\n\r\x00") {
			return domain.Invalid("invalid_full_name", "the full name is at most 128 characters without : , or line breaks (it goes into /etc/passwd)")
		}
		u.FullName = strings.TrimSpace(*in.FullName)
	}
	if in.Email != nil {
		e := strings.TrimSpace(*in.Email)
		if e != "" {
			if a, err := mail.ParseAddress(e); err != nil || a.Address != e || len(e) > 254 {
				return domain.Invalid("invalid_email", "the e-mail address is not valid")
			}
		}
		u.Email = e
	}
	if in.AccountType != nil {
		if *in.AccountType != domain.AccountFull && *in.AccountType != domain.AccountFileAccess {
			return domain.Invalid("invalid_account_type", "the account type is full or file_access")
		}
		u.AccountType = *in.AccountType
	}
	if u.AccountType == "" {
		u.AccountType = domain.AccountFull
	}
	if in.Shell != nil {
		u.Shell = *in.Shell
	}
	if in.SFTPChroot != nil {
		u.SFTPChroot = *in.SFTPChroot
	}
	switch {
	case u.AccountType == domain.AccountFileAccess:
		u.Shell = NologinShell
	case u.Shell == "" || u.Shell == NologinShell:
		u.Shell = DefaultShell
	case !allowedShells[u.Shell]:
		return domain.Invalid("invalid_shell", "the shell must be one of /bin/bash, /bin/sh, /bin/dash, /bin/zsh, /usr/bin/fish")
	}
	if u.AccountType == domain.AccountFull {
		u.SFTPChroot = false
	}
	if in.DefaultProfileID != nil {
		if *in.DefaultProfileID != "" {
			if _, err := s.store.GetProfile(ctx, *in.DefaultProfileID); err != nil {
				return domain.Invalid("unknown_profile", "the default profile does not exist")
			}
		}
		u.DefaultProfileID = *in.DefaultProfileID
	}
	return nil
}

// ListUsers returns the catalogue.
func (s *Service) ListUsers(ctx context.Context) ([]domain.LinuxUser, error) {
	return s.store.ListLinuxUsers(ctx)
}

// GetUser returns one Linux user.
func (s *Service) GetUser(ctx context.Context, id string) (domain.LinuxUser, error) {
	return s.store.GetLinuxUser(ctx, id)
}

// CreateUser adds a person to the catalogue.
func (s *Service) CreateUser(ctx context.Context, p *domain.Principal, in UserInput) (domain.LinuxUser, error) {
	if err := requireAdmin(p); err != nil {
		return domain.LinuxUser{}, err
	}
	u := domain.LinuxUser{Username: strings.TrimSpace(in.Username)}
	if err := CheckUsername(u.Username); err != nil {
		return domain.LinuxUser{}, err
	}
	if err := s.checkUserFields(ctx, &u, in); err != nil {
		return domain.LinuxUser{}, err
	}
	return s.store.CreateLinuxUser(ctx, u)
}

// UpdateUser changes a Linux user (the user name is fixed: it is the
// account on every server).
func (s *Service) UpdateUser(ctx context.Context, p *domain.Principal, id string, in UserInput) (domain.LinuxUser, error) {
	if err := requireAdmin(p); err != nil {
		return domain.LinuxUser{}, err
	}
	u, err := s.store.GetLinuxUser(ctx, id)
	if err != nil {
		return domain.LinuxUser{}, err
	}
	if err := s.checkUserFields(ctx, &u, in); err != nil {
		return domain.LinuxUser{}, err
	}
	return s.store.UpdateLinuxUser(ctx, id, store.LinuxUserSettings{FullName: &u.FullName, Email: &u.Email, Shell: &u.Shell,
		AccountType: &u.AccountType, SFTPChroot: &u.SFTPChroot, DefaultProfileID: &u.DefaultProfileID})
}

// DeleteUser removes a user from the catalogue; 409 while the account
// still exists on a server (remove it there first).
func (s *Service) DeleteUser(ctx context.Context, p *domain.Principal, id string) (domain.LinuxUser, error) {
	if err := requireAdmin(p); err != nil {
		return domain.LinuxUser{}, err
	}
	u, err := s.store.GetLinuxUser(ctx, id)
	if err != nil {
		return domain.LinuxUser{}, err
	}
	prov, err := s.store.ListLinuxUserProvisions(ctx, id, "")
	if err != nil {
		return u, err
	}
	if len(prov) > 0 {
		return u, &domain.Error{Kind: domain.ErrConflict, Code: "still_provisioned",
			Message: fmt.Sprintf("%s still has an account on %d server(s): remove it from the servers first", u.Username, len(prov)),
			Details: map[string]any{"servers": len(prov)}}
	}
	return u, s.store.DeleteLinuxUser(ctx, id)
}

// ---- SSH keys ----

// minRSABits: RSA keys below 3072 bits fall short of current guidance.
const minRSABits = 3072

// allowedKeyTypes maps accepted key types to their fixed size (0: RSA,
// measured).
var allowedKeyTypes = map[string]int{
	ssh.KeyAlgoED25519: 256, ssh.KeyAlgoSKED25519: 256,
	ssh.KeyAlgoECDSA256: 256, ssh.KeyAlgoECDSA384: 384, ssh.KeyAlgoECDSA521: 521, ssh.KeyAlgoSKECDSA256: 256,
	ssh.KeyAlgoRSA: 0,
}

// ParsePublicKey validates one authorized_keys line: no options, an
// accepted type and size. It returns the key as LCM stores it.
func ParsePublicKey(line string) (domain.LinuxUserKey, error) {
	line = strings.TrimSpace(line)
	if strings.ContainsAny(line, "\n\r") {
		return domain.LinuxUserKey{}, domain.Invalid("invalid_key", "give one key on one line")
	}
	pub, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil || len(rest) > 0 {
		return domain.LinuxUserKey{}, domain.Invalid("invalid_key", "not an SSH public key in authorized_keys format")
	}
	if len(options) > 0 {
		return domain.LinuxUserKey{}, domain.Invalid("key_options", "key options are not accepted; give the bare key")
	}
	bits, ok := allowedKeyTypes[pub.Type()]
	if !ok {
		return domain.LinuxUserKey{}, domain.Invalid("key_type_not_allowed", fmt.Sprintf("key type %s is not accepted (ed25519, ECDSA or RSA of at least %d bits)", pub.Type(), minRSABits))
	}
	if pub.Type() == ssh.KeyAlgoRSA {
		ck, ok := pub.(ssh.CryptoPublicKey)
		rk, ok2 := ck.CryptoPublicKey().(*rsa.PublicKey)
		if !ok || !ok2 {
			return domain.LinuxUserKey{}, domain.Invalid("invalid_key", "unreadable RSA key")
		}
		bits = rk.N.BitLen()
		if bits < minRSABits {
			return domain.LinuxUserKey{}, domain.Invalid("key_too_small", fmt.Sprintf("RSA keys need at least %d bits (this one has %d)", minRSABits, bits))
		}
	}
	comment = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, comment)
	if len(comment) > 200 {
		comment = comment[:200]
	}
	norm := strings.TrimSpace(pub.Type() + " " + base64.StdEncoding.EncodeToString(pub.Marshal()) + " " + comment)
	return domain.LinuxUserKey{Type: pub.Type(), Bits: bits, Fingerprint: ssh.FingerprintSHA256(pub), Comment: comment, PublicKey: norm}, nil
}

// AddKey adds a public key to a user; PushKeys takes it to the servers.
func (s *Service) AddKey(ctx context.Context, p *domain.Principal, userID, line string) (domain.LinuxUserKey, error) {
	if err := requireAdmin(p); err != nil {
		return domain.LinuxUserKey{}, err
	}
	k, err := ParsePublicKey(line)
	if err != nil {
		return domain.LinuxUserKey{}, err
	}
	if _, err := s.store.GetLinuxUser(ctx, userID); err != nil {
		return domain.LinuxUserKey{}, err
	}
	k.UserID = userID
	return s.store.AddLinuxUserKey(ctx, k)
}

// GeneratedKey is a new key pair: the private key is shown once and never
// stored.
type GeneratedKey struct {
	Key        domain.LinuxUserKey
	PrivateKey string
}

// GenerateKey creates an ed25519 key pair for a user and stores the public
// half.
func (s *Service) GenerateKey(ctx context.Context, p *domain.Principal, userID string) (GeneratedKey, error) {
	if err := requireAdmin(p); err != nil {
		return GeneratedKey{}, err
	}
	u, err := s.store.GetLinuxUser(ctx, userID)
	if err != nil {
		return GeneratedKey{}, err
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return GeneratedKey{}, err
	}
	comment := u.Username + "@lcm-" + time.Now().UTC().Format("20060102")
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return GeneratedKey{}, err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return GeneratedKey{}, err
	}
	k, err := ParsePublicKey(strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " " + comment)
	if err != nil {
		return GeneratedKey{}, err
	}
	k.UserID = userID
	k, err = s.store.AddLinuxUserKey(ctx, k)
	if err != nil {
		return GeneratedKey{}, err
	}
	return GeneratedKey{Key: k, PrivateKey: string(pem.EncodeToMemory(block))}, nil
}

// RemoveKey deletes a key.
func (s *Service) RemoveKey(ctx context.Context, p *domain.Principal, keyID string) (domain.LinuxUserKey, error) {
	if err := requireAdmin(p); err != nil {
		return domain.LinuxUserKey{}, err
	}
	k, err := s.store.GetLinuxUserKey(ctx, keyID)
	if err != nil {
		return domain.LinuxUserKey{}, err
	}
	return k, s.store.DeleteLinuxUserKey(ctx, keyID)
}

// ---- activation links ----

// ActivationTTL is how long an activation link works.
const ActivationTTL = 72 * time.Hour

// ActivationLink is a new link: the token is shown once; only its hash is
// stored.
type ActivationLink struct {
	Token     string
	Path      string
	ExpiresAt time.Time
}

func tokenHash(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// GenerateActivationLink creates a link with which the person sets the
// account's password.
func (s *Service) GenerateActivationLink(ctx context.Context, p *domain.Principal, userID string) (ActivationLink, error) {
	if err := requireAdmin(p); err != nil {
		return ActivationLink{}, err
	}
	if _, err := s.store.GetLinuxUser(ctx, userID); err != nil {
		return ActivationLink{}, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return ActivationLink{}, err
	}
	tok := base64.RawURLEncoding.EncodeToString(raw)
	exp := time.Now().UTC().Add(ActivationTTL)
	if err := s.store.CreateLinuxUserActivation(ctx, userID, tokenHash(tok), exp); err != nil {
		return ActivationLink{}, err
	}
	return ActivationLink{Token: tok, Path: "/#/linux-user-activation?token=" + tok, ExpiresAt: exp}, nil
}

// ConsumeActivationLink sets the password of the link's user: the policy
// applies (with the user's name and e-mail as identity), the link works
// once, and only the SHA-512 crypt hash is stored (encrypted). A rejected
// password leaves the link usable.
func (s *Service) ConsumeActivationLink(ctx context.Context, token, pw string) (domain.LinuxUser, error) {
	if token == "" || len(token) > 128 {
		return domain.LinuxUser{}, domain.NotFound("activation link")
	}
	userID, err := s.store.PeekLinuxUserActivation(ctx, tokenHash(token), time.Now())
	if err != nil {
		return domain.LinuxUser{}, err
	}
	u, err := s.store.GetLinuxUser(ctx, userID)
	if err != nil {
		return domain.LinuxUser{}, err
	}
	first, last, _ := strings.Cut(u.FullName, " ")
	if err := password.Validate(pw, password.Identity{Username: u.Username, FirstName: first, LastName: last, Email: u.Email}); err != nil {
		return domain.LinuxUser{}, err
	}
	hash, err := shacrypt.Hash(pw)
	if err != nil {
		return domain.LinuxUser{}, err
	}
	if _, err := s.store.ConsumeLinuxUserActivation(ctx, tokenHash(token), time.Now()); err != nil {
		return domain.LinuxUser{}, err
	}
	if err := s.store.SetLinuxUserPassword(ctx, userID, hash); err != nil {
		return domain.LinuxUser{}, err
	}
	return s.store.GetLinuxUser(ctx, userID)
}

// ---- assignments ----

// Assign assigns a user to a server or group with a profile ("" = the
// user's default).
func (s *Service) Assign(ctx context.Context, p *domain.Principal, userID, targetType, targetID, profileID string) (domain.LinuxUserAssignment, error) {
	if err := requireAdmin(p); err != nil {
		return domain.LinuxUserAssignment{}, err
	}
	if _, err := s.store.GetLinuxUser(ctx, userID); err != nil {
		return domain.LinuxUserAssignment{}, err
	}
	switch targetType {
	case domain.TargetServer:
		if _, err := s.store.GetServer(ctx, store.SystemScope, targetID); err != nil {
			return domain.LinuxUserAssignment{}, domain.Invalid("unknown_server", "the server does not exist")
		}
	case domain.TargetGroup:
		if _, err := s.store.GetGroup(ctx, store.SystemScope, targetID); err != nil {
			return domain.LinuxUserAssignment{}, domain.Invalid("unknown_group", "the group does not exist")
		}
	default:
		return domain.LinuxUserAssignment{}, domain.Invalid("invalid_target", "assign to a server or a group")
	}
	if profileID != "" {
		if _, err := s.store.GetProfile(ctx, profileID); err != nil {
			return domain.LinuxUserAssignment{}, domain.Invalid("unknown_profile", "the profile does not exist")
		}
	}
	return s.store.UpsertLinuxUserAssignment(ctx, domain.LinuxUserAssignment{UserID: userID, TargetType: targetType, TargetID: targetID, ProfileID: profileID})
}

// Unassign removes an assignment (the accounts go at the next sync).
func (s *Service) Unassign(ctx context.Context, p *domain.Principal, userID, targetType, targetID string) error {
	if err := requireAdmin(p); err != nil {
		return err
	}
	return s.store.DeleteLinuxUserAssignment(ctx, userID, targetType, targetID)
}

// Assignments lists a user's assignments.
func (s *Service) Assignments(ctx context.Context, userID string) ([]domain.LinuxUserAssignment, error) {
	if _, err := s.store.GetLinuxUser(ctx, userID); err != nil {
		return nil, err
	}
	return s.store.ListLinuxUserAssignments(ctx, userID)
}

// GroupOf names the Linux group that carries a profile's sudo rights on a
// server of family ("" for the standard profile).
func GroupOf(p domain.PrivilegeProfile, family string) string {
	switch p.Kind {
	case domain.ProfileFullAdmin:
		return AdminGroup(family)
	case domain.ProfileCustom:
		return privilege.GroupName(p.Slug)
	}
	return ""
}

// UserServers resolves where a user is assigned: every server of its
// assignments (directly or through groups) with the effective profile, and
// every server it still has an account on.
func (s *Service) UserServers(ctx context.Context, userID string) ([]UserServer, error) {
	u, err := s.store.GetLinuxUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	as, err := s.store.ListLinuxUserAssignments(ctx, userID)
	if err != nil {
		return nil, err
	}
	provs, err := s.store.ListLinuxUserProvisions(ctx, userID, "")
	if err != nil {
		return nil, err
	}
	state := map[string]string{}
	for _, p := range provs {
		state[p.ServerID] = p.State
	}
	candidates := map[string]domain.Server{}
	for _, a := range as {
		switch a.TargetType {
		case domain.TargetServer:
			if srv, err := s.store.GetServer(ctx, store.SystemScope, a.TargetID); err == nil {
				candidates[srv.ID] = srv
			}
		case domain.TargetGroup:
			list, err := s.store.ListServers(ctx, store.SystemScope, store.ServerFilter{GroupID: a.TargetID})
			if err != nil {
				return nil, err
			}
			for _, srv := range list {
				candidates[srv.ID] = srv
			}
		}
	}
	for _, p := range provs {
		if _, ok := candidates[p.ServerID]; !ok {
			if srv, err := s.store.GetServer(ctx, store.SystemScope, p.ServerID); err == nil {
				candidates[srv.ID] = srv
			}
		}
	}
	out := []UserServer{}
	ranks := groupRanks{}
	for _, srv := range candidates {
		us := UserServer{ServerID: srv.ID, ServerName: srv.Name, State: state[srv.ID]}
		r, err := s.resolve(ctx, u, srv, as, ranks)
		if err != nil {
			return nil, err
		}
		if r.OK {
			us.ProfileID, us.ProfileName, us.Via, us.GroupID, us.GroupName, us.Warning = r.Profile.ID, r.Profile.Name, r.Via, r.GroupID, r.GroupName, r.Warning
		}
		if us.State == "" {
			us.State = domain.ProvisionPending
		}
		out = append(out, us)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ServerName < out[j].ServerName })
	return out, nil
}
