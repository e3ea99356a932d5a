package linuxusers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/privilege"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

var (
	admin   = &domain.Principal{UserID: "a", Username: "admin", Roles: []string{domain.RoleAdmin}}
	manager = &domain.Principal{UserID: "m", Username: "mgr", Roles: []string{domain.RoleManager},
		Permissions: map[string]bool{domain.PermProfilesWrite: true, domain.PermLinuxUsersWrite: true}}
)

func newSvc(t *testing.T, url string) *Service {
	t.Helper()
	s := New(storetest.Open(t, url), nil, nil)
	if err := s.SeedBuiltins(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func codeOf(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

func TestProfilesAndBlocks(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) { testProfilesAndBlocks(t, db.URL) })
	}
}

func testProfilesAndBlocks(t *testing.T, url string) {
	ctx := context.Background()
	s := newSvc(t, url)
	// Seeding twice changes nothing.
	if err := s.SeedBuiltins(ctx); err != nil {
		t.Fatal(err)
	}
	profiles, err := s.ListProfiles(ctx)
	if err != nil || len(profiles) != 2 || !profiles[0].BuiltIn || !profiles[1].BuiltIn {
		t.Fatalf("built-ins: %+v %v", profiles, err)
	}
	blocks, err := s.ListBlocks(ctx)
	if err != nil || len(blocks) != len(privilege.Builtins()) {
		t.Fatalf("blocks: %d %v", len(blocks), err)
	}
	blockBySlug := map[string]domain.ProfileBlock{}
	for _, b := range blocks {
		blockBySlug[b.Slug] = b
	}

	// Built-ins are immutable.
	full := profiles[0]
	if _, err := s.UpdateProfile(ctx, admin, full.ID, ProfileInput{Name: ptr("x")}); codeOf(err) != "builtin_immutable" {
		t.Fatalf("update built-in: %v", err)
	}
	if _, err := s.DeleteProfile(ctx, admin, full.ID); codeOf(err) != "builtin_immutable" {
		t.Fatalf("delete built-in: %v", err)
	}
	r, err := s.RenderProfile(ctx, full, "dnf")
	if err != nil || r.AdminGroup != "wheel" || r.Sudoers != "" {
		t.Fatalf("full admin: %+v %v", r, err)
	}

	// Only admins change profiles, whatever a role grants.
	if _, err := s.CreateProfile(ctx, manager, ProfileInput{Name: ptr("Ops")}); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("manager create: %v", err)
	}

	// Every rejection class comes back with its code and the rule's index.
	for code, rule := range map[string]domain.ProfileRule{
		privilege.CodeRelativePath: {Argv: []string{"systemctl", "status", "ssh"}},
		privilege.CodeWildcard:     {Argv: []string{"/usr/bin/systemctl", "restart", "*"}},
		privilege.CodeShellMeta:    {Argv: []string{"/usr/bin/du", "a;b"}},
		privilege.CodeComma:        {Argv: []string{"/usr/bin/du", "a,b"}},
		privilege.CodeBareCommand:  {Argv: []string{"/usr/bin/docker"}},
		privilege.CodeDangerous:    {Argv: []string{"/bin/sh"}},
	} {
		rules := []domain.ProfileRule{{Argv: []string{"/usr/sbin/nginx", "-t"}}, rule}
		_, err := s.CreateProfile(ctx, admin, ProfileInput{Name: ptr("Bad " + code), Rules: &rules})
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != code || !errors.Is(err, domain.ErrInvalid) {
			t.Fatalf("%s: %v", code, err)
		}
		if list := de.Details.([]*privilege.Error); len(list) != 1 || list[0].Index != 1 {
			t.Fatalf("%s: details %+v", code, de.Details)
		}
	}

	// A valid profile: normalized rules, a block use, a confirmed dangerous rule.
	rules := []domain.ProfileRule{
		{Kind: "command", Argv: []string{"/usr/bin/systemctl", "status", "ssh"}},
		{Kind: "command", Argv: []string{"/usr/bin/vim", "/etc/motd"}},
		{Kind: "command", Argv: []string{"/usr/bin/tee", "/var/log/marker"}, Confirmed: true},
	}
	uses := []domain.BlockUse{{BlockID: blockBySlug["service-restart"].ID, Params: map[string]string{"unit": "nginx"}}}
	w, err := s.CreateProfile(ctx, admin, ProfileInput{Name: ptr("Web Ops"), Rules: &rules, Blocks: &uses})
	if err != nil {
		t.Fatal(err)
	}
	p := w.Profile
	if p.Slug != "web-ops" || p.Kind != domain.ProfileCustom || len(w.Confirmations) != 1 || w.Confirmations[0] != "/usr/bin/tee /var/log/marker" {
		t.Fatalf("created %+v, confirmations %v", p, w.Confirmations)
	}
	if got := p.Rules[0].Argv; strings.Join(got, " ") != "/usr/bin/systemctl --no-pager status ssh" {
		t.Fatalf("not normalized: %v", got)
	}
	if p.Rules[1].Kind != "edit" || p.Rules[1].Path != "/etc/motd" {
		t.Fatalf("editor not turned into sudoedit: %+v", p.Rules[1])
	}
	r, err = s.RenderProfile(ctx, p, "apt")
	if err != nil {
		t.Fatal(err)
	}
	want := "%lcm-prof-web-ops ALL=(root) NOPASSWD: /usr/bin/systemctl --no-pager restart nginx\n"
	if !strings.Contains(r.Sudoers, want) || !strings.Contains(r.Sudoers, "sudoedit /etc/motd") || r.Path != "/etc/sudoers.d/lcm-prof-web-ops" {
		t.Fatalf("rendered:\n%s", r.Sudoers)
	}
	// Saving the same confirmed rule again confirms nothing new.
	w, err = s.UpdateProfile(ctx, admin, p.ID, ProfileInput{Description: ptr("web team"), Rules: &p.Rules})
	if err != nil || len(w.Confirmations) != 0 {
		t.Fatalf("update: %v %v", w.Confirmations, err)
	}
	// A second profile with the same name conflicts; a clone gets its own slug.
	if _, err := s.CreateProfile(ctx, admin, ProfileInput{Name: ptr("Web Ops")}); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("duplicate name: %v", err)
	}
	c, err := s.CloneProfile(ctx, admin, p.ID, "Web Ops 2")
	if err != nil || c.Profile.Slug != "web-ops-2" || len(c.Profile.Rules) != 3 || len(c.Profile.Blocks) != 1 {
		t.Fatalf("clone %+v %v", c.Profile, err)
	}
	cb, err := s.CloneProfile(ctx, admin, full.ID, "")
	if err != nil || cb.Profile.BuiltIn || cb.Profile.Kind != domain.ProfileCustom || cb.Profile.Name != "Full administrator (copy)" {
		t.Fatalf("clone built-in %+v %v", cb.Profile, err)
	}

	// Blocks: usage, preview, built-ins immutable, delete only unused.
	restart := blockBySlug["service-restart"]
	usage, err := s.BlockUsage(ctx, restart.ID)
	if err != nil || len(usage) != 2 {
		t.Fatalf("usage %v %v", usage, err)
	}
	prev, err := s.PreviewBlock(ctx, restart.ID, "apk", map[string]string{"unit": "sshd"})
	if err != nil || prev.Sudoers != "%lcm-prof-preview ALL=(root) NOPASSWD: /sbin/rc-service sshd restart\n" {
		t.Fatalf("preview %q %v", prev.Sudoers, err)
	}
	if _, err := s.PreviewBlock(ctx, blockBySlug["service-journal"].ID, "apk", nil); codeOf(err) != privilege.CodeNoVariant {
		t.Fatalf("no variant: %v", err)
	}
	if _, err := s.DeleteBlock(ctx, admin, restart.ID); codeOf(err) != "builtin_immutable" {
		t.Fatalf("delete built-in block: %v", err)
	}
	mine, err := s.CloneBlock(ctx, admin, restart.ID, "My restart")
	if err != nil || mine.BuiltIn {
		t.Fatalf("clone block %+v %v", mine, err)
	}
	u2 := []domain.BlockUse{{BlockID: mine.ID, Params: map[string]string{"unit": "cron"}}}
	if _, err := s.UpdateProfile(ctx, admin, c.Profile.ID, ProfileInput{Blocks: &u2}); err != nil {
		t.Fatal(err)
	}
	// A change that breaks a using profile is refused.
	bad := map[string][]domain.ProfileRule{"*": {{Kind: "command", Argv: []string{"/usr/bin/systemctl", "restart", "{service}"}}}}
	if _, err := s.UpdateBlock(ctx, admin, mine.ID, BlockInput{Params: &[]domain.BlockParam{{Name: "service", Kind: "name"}}, Variants: &bad}); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("breaking update: %v", err)
	}
	if _, err := s.DeleteBlock(ctx, admin, mine.ID); codeOf(err) != "block_in_use" {
		t.Fatalf("delete used block: %v", err)
	}
	if _, err := s.UpdateProfile(ctx, admin, c.Profile.ID, ProfileInput{Blocks: &[]domain.BlockUse{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteBlock(ctx, admin, mine.ID); err != nil {
		t.Fatal(err)
	}
	// A block definition is validated like rules.
	v := map[string][]domain.ProfileRule{"apt": {{Kind: "command", Argv: []string{"/usr/bin/apt-get"}}}}
	if _, err := s.CreateBlock(ctx, admin, BlockInput{Name: ptr("Bare"), Variants: &v}); codeOf(err) != privilege.CodeBareCommand {
		t.Fatalf("bare block: %v", err)
	}

	// Delete: only when unused.
	if _, err := s.DeleteProfile(ctx, admin, c.Profile.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetProfile(ctx, c.Profile.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
	// Live preview of an unsaved edit.
	edit := []domain.ProfileRule{{Argv: []string{"/usr/sbin/nginx", "-t"}}}
	pr, err := s.PreviewProfile(ctx, p.ID, ProfileInput{Rules: &edit}, "pacman")
	if err != nil || !strings.Contains(pr.Sudoers, "NOPASSWD: /usr/sbin/nginx -t\n") || !strings.Contains(pr.Sudoers, "/usr/bin/systemctl --no-pager restart nginx") {
		t.Fatalf("preview %q %v", pr.Sudoers, err)
	}
	if _, err := s.PreviewProfile(ctx, "", ProfileInput{Name: ptr("x")}, "beos"); codeOf(err) != privilege.CodeUnknownFamily {
		t.Fatalf("bad family: %v", err)
	}
}
