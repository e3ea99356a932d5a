package linuxusers

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/shacrypt"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

func TestCheckUsername(t *testing.T) {
	for name, code := range map[string]string{
		"alice": "", "_svc": "reserved_username", "a-b_c9": "", strings.Repeat("a", 32): "",
		"": "invalid_username", "Alice": "invalid_username", "9lives": "invalid_username", "-x": "invalid_username",
		"a.b": "invalid_username", "a b": "invalid_username", "a$": "invalid_username", strings.Repeat("a", 33): "invalid_username",
		"root": "reserved_username", "www-data": "reserved_username", "nobody": "reserved_username", "lcm": "reserved_username",
		"lcm-prof-x": "reserved_username", "systemd-network": "reserved_username", "sshd": "reserved_username",
	} {
		err := CheckUsername(name)
		if got := codeOf(err); got != code {
			t.Errorf("%q: %q, want %q", name, got, code)
		}
	}
}

func rsaKeyLine(t *testing.T, bits int) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " rsa@test"
}

func TestParsePublicKey(t *testing.T) {
	ed := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"
	k, err := ParsePublicKey("  " + ed + "  ")
	if err != nil || k.Type != "ssh-ed25519" || k.Bits != 256 || k.PublicKey != ed || !strings.HasPrefix(k.Fingerprint, "SHA256:") {
		t.Fatalf("%+v %v", k, err)
	}
	if k, err := ParsePublicKey(rsaKeyLine(t, 3072)); err != nil || k.Bits != 3072 {
		t.Fatalf("rsa 3072: %+v %v", k, err)
	}
	for line, code := range map[string]string{
		rsaKeyLine(t, 2048):              "key_too_small",
		"command=\"/bin/sh\" " + ed:      "key_options",
		"ssh-ed25519 notbase64":          "invalid_key",
		"":                               "invalid_key",
		ed + "\n" + ed:                   "invalid_key",
		"ssh-dss AAAAB3NzaC1kc3MAAACBAP": "invalid_key",
	} {
		if _, err := ParsePublicKey(line); codeOf(err) != code {
			t.Errorf("%.40q: %v, want %s", line, err, code)
		}
	}
}

func TestCatalogue(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) { testCatalogue(t, db.URL) })
	}
}

func testCatalogue(t *testing.T, url string) {
	ctx := context.Background()
	s := newSvc(t, url)
	if _, err := s.CreateUser(ctx, manager, UserInput{Username: "alice"}); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("manager: %v", err)
	}
	u, err := s.CreateUser(ctx, admin, UserInput{Username: "alice", FullName: ptr("Alice Example"), Email: ptr("alice@example.org")})
	if err != nil || u.Shell != DefaultShell || u.AccountType != domain.AccountFull {
		t.Fatalf("create %+v %v", u, err)
	}
	if _, err := s.CreateUser(ctx, admin, UserInput{Username: "alice"}); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("duplicate: %v", err)
	}
	for in, code := range map[*UserInput]string{
		{Username: "root"}: "reserved_username",
		{Username: "bob", Shell: ptr("/usr/bin/vim")}: "invalid_shell",
		{Username: "bob", Email: ptr("not an email")}: "invalid_email",
		{Username: "bob", FullName: ptr("a:b")}:       "invalid_full_name",
		{Username: "bob", AccountType: ptr("root")}:   "invalid_account_type",
		{Username: "bob", DefaultProfileID: ptr("x")}: "unknown_profile",
	} {
		if _, err := s.CreateUser(ctx, admin, *in); codeOf(err) != code {
			t.Errorf("%+v: %v, want %s", *in, err, code)
		}
	}
	// A file-access-only account gets nologin, whatever shell was asked.
	f, err := s.CreateUser(ctx, admin, UserInput{Username: "ftpbob", AccountType: ptr(domain.AccountFileAccess), Shell: ptr("/bin/bash"), SFTPChroot: ptr(true)})
	if err != nil || f.Shell != NologinShell || !f.SFTPChroot {
		t.Fatalf("file access %+v %v", f, err)
	}
	f, err = s.UpdateUser(ctx, admin, f.ID, UserInput{AccountType: ptr(domain.AccountFull)})
	if err != nil || f.Shell != DefaultShell || f.SFTPChroot {
		t.Fatalf("back to full %+v %v", f, err)
	}

	// Keys: add, duplicate, generate (private key once, public stored), remove.
	ed := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop"
	k, err := s.AddKey(ctx, admin, u.ID, ed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddKey(ctx, admin, u.ID, ed); codeOf(err) != "duplicate_key" {
		t.Fatalf("duplicate key: %v", err)
	}
	g, err := s.GenerateKey(ctx, admin, u.ID)
	if err != nil || !strings.Contains(g.PrivateKey, "OPENSSH PRIVATE KEY") || g.Key.Type != "ssh-ed25519" {
		t.Fatalf("generate %+v %v", g.Key, err)
	}
	signer, err := ssh.ParsePrivateKey([]byte(g.PrivateKey))
	if err != nil || ssh.FingerprintSHA256(signer.PublicKey()) != g.Key.Fingerprint {
		t.Fatalf("generated pair does not match: %v", err)
	}
	got, _ := s.GetUser(ctx, u.ID)
	if len(got.Keys) != 2 {
		t.Fatalf("keys %+v", got.Keys)
	}
	if _, err := s.RemoveKey(ctx, admin, k.ID); err != nil {
		t.Fatal(err)
	}

	// Activation: policy codes, single use, stored as an encrypted $6$ hash.
	l, err := s.GenerateActivationLink(ctx, admin, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	for pw, code := range map[string]string{"short1A!": "too_short", "Alice-Example-2024x": "contains_identity"} {
		if _, err := s.ConsumeActivationLink(ctx, l.Token, pw); codeOf(err) != code {
			t.Errorf("%q: %v, want %s", pw, err, code)
		}
	}
	done, err := s.ConsumeActivationLink(ctx, l.Token, "Quiet-Harbor-73m")
	if err != nil || !strings.HasPrefix(done.PasswordHash, "$6$rounds=65000$") || !shacrypt.Verify(done.PasswordHash, "Quiet-Harbor-73m") || done.PasswordSetAt == nil {
		t.Fatalf("consume: %v %q", err, done.PasswordHash)
	}
	if _, err := s.ConsumeActivationLink(ctx, l.Token, "Quiet-Harbor-73m"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second use: %v", err)
	}
	if _, err := s.ConsumeActivationLink(ctx, "forged", "Quiet-Harbor-73m"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("forged: %v", err)
	}

	// Effective profile: server assignment beats groups; among groups the
	// lower priority number wins, a tie goes to the older group with a
	// warning; no profile means the default, then standard.
	profiles, _ := s.ListProfiles(ctx)
	var full, std domain.PrivilegeProfile
	for _, p := range profiles {
		switch p.Slug {
		case SlugFullAdmin:
			full = p
		case SlugStandard:
			std = p
		}
	}
	rules := []domain.ProfileRule{{Argv: []string{"/usr/sbin/nginx", "-t"}}}
	web, err := s.CreateProfile(ctx, admin, ProfileInput{Name: ptr("Web"), Rules: &rules})
	if err != nil {
		t.Fatal(err)
	}
	st := s.store
	g1, _ := st.CreateGroup(ctx, domain.Group{Name: "g1"})
	g2, _ := st.CreateGroup(ctx, domain.Group{Name: "g2"})
	srv := domain.Server{ID: "srv-1", GroupIDs: []string{g1.ID, g2.ID}}
	as := []domain.LinuxUserAssignment{}
	if _, ok, _ := s.EffectiveProfile(ctx, u, srv, as); ok {
		t.Fatal("unassigned user has a profile")
	}
	as = append(as, domain.LinuxUserAssignment{UserID: u.ID, TargetType: domain.TargetGroup, TargetID: g1.ID})
	if p, ok, err := s.EffectiveProfile(ctx, u, srv, as); !ok || err != nil || p.ID != std.ID {
		t.Fatalf("group without profile: %+v %v", p, err)
	}
	setPrio := func(g domain.Group, prio int) {
		t.Helper()
		if _, err := st.SetGroupAutomation(ctx, domain.GroupAutomation{GroupID: g.ID, Priority: prio}); err != nil {
			t.Fatal(err)
		}
	}
	as = []domain.LinuxUserAssignment{
		{UserID: u.ID, TargetType: domain.TargetGroup, TargetID: g1.ID, ProfileID: full.ID},
		{UserID: u.ID, TargetType: domain.TargetGroup, TargetID: g2.ID, ProfileID: web.Profile.ID},
	}
	for _, c := range []struct {
		name       string
		p1, p2     int
		want       string
		wantGroup  string
		wantWarned bool
	}{
		{"g2 ranks first (lower number), though less privileged", 200, 50, web.Profile.ID, g2.ID, false},
		{"g1 ranks first", 10, 50, full.ID, g1.ID, false},
		{"tie: the older group g1 wins, with a warning", 100, 100, full.ID, g1.ID, true},
		{"g2 ranks first: Standard wins over Full administrator", 9999, 1, web.Profile.ID, g2.ID, false},
	} {
		setPrio(g1, c.p1)
		setPrio(g2, c.p2)
		r, err := s.resolve(ctx, u, srv, as, groupRanks{})
		if err != nil || !r.OK || r.Profile.ID != c.want || r.GroupID != c.wantGroup || r.Via != domain.TargetGroup || (r.Warning != "") != c.wantWarned {
			t.Fatalf("%s: %+v %v", c.name, r, err)
		}
		if c.wantWarned && !strings.Contains(r.Warning, `the older group "g1" wins`) {
			t.Fatalf("%s: warning %q", c.name, r.Warning)
		}
	}
	// The group with the lower number and no profile gives the default.
	as[1].ProfileID = ""
	if p, _, _ := s.EffectiveProfile(ctx, u, srv, as); p.ID != std.ID {
		t.Fatalf("winning group without profile: %+v", p)
	}
	as = append(as, domain.LinuxUserAssignment{UserID: u.ID, TargetType: domain.TargetServer, TargetID: srv.ID, ProfileID: web.Profile.ID})
	if r, _ := s.resolve(ctx, u, srv, as, groupRanks{}); r.Profile.ID != web.Profile.ID || r.Via != domain.TargetServer || r.GroupID != "" {
		t.Fatalf("server assignment wins: %+v", r)
	}
	setPrio(g1, domain.DefaultGroupPriority)
	setPrio(g2, domain.DefaultGroupPriority)
	// A profile in use cannot be deleted.
	if _, err := s.Assign(ctx, admin, u.ID, domain.TargetGroup, g2.ID, web.Profile.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteProfile(ctx, admin, web.Profile.ID); codeOf(err) != "profile_in_use" {
		t.Fatalf("delete used profile: %v", err)
	}
	if _, err := s.Assign(ctx, admin, u.ID, "planet", g2.ID, ""); codeOf(err) != "invalid_target" {
		t.Fatalf("bad target: %v", err)
	}
	// Delete: refused while provisioned.
	srvRow, err := st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: "s1", Host: "192.0.2.10", Port: 22, Transport: domain.TransportSSH,
		Status: domain.ServerGreen, AuthMethod: domain.AuthKey, HostKey: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetLinuxUserProvision(ctx, domain.LinuxUserProvision{UserID: u.ID, ServerID: srvRow.ID, Username: u.Username, State: domain.ProvisionProvisioned}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(ctx, admin, u.ID); codeOf(err) != "still_provisioned" {
		t.Fatalf("delete provisioned: %v", err)
	}
	if err := st.DeleteLinuxUserProvision(ctx, u.ID, srvRow.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(ctx, admin, u.ID); err != nil {
		t.Fatal(err)
	}
}
