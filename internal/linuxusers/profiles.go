package linuxusers

import (
	"context"
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/privilege"
)

// ProfileInput is a profile's changeable fields; nil fields stay.
type ProfileInput struct {
	Name        *string
	Description *string
	Rules       *[]domain.ProfileRule
	Blocks      *[]domain.BlockUse
}

// ProfileWrite is a stored profile and the dangerous rules this write
// confirmed for the first time (each is audited naming the rule and the
// person).
type ProfileWrite struct {
	Profile       domain.PrivilegeProfile
	Confirmations []string
}

// Rendered is what a profile becomes on a server of one family.
type Rendered struct {
	Family string `json:"family"`
	// Group is the profile group (lcm-prof-<slug>); "" for the built-ins.
	Group string `json:"group"`
	// Path is the sudoers file; "" when LCM writes none.
	Path    string `json:"path"`
	Sudoers string `json:"sudoers"`
	// ACLs are the directory ACL rules (setfacl for Group).
	ACLs []domain.ProfileRule `json:"acls"`
	// AdminGroup is the distribution's administrator group a full
	// administrator joins (sudo, wheel).
	AdminGroup string `json:"admin_group,omitempty"`
	// Warnings name block uses without a variant for the family (they
	// grant nothing there).
	Warnings []string `json:"warnings"`
}

// ListProfiles returns every profile.
func (s *Service) ListProfiles(ctx context.Context) ([]domain.PrivilegeProfile, error) {
	return s.store.ListProfiles(ctx)
}

// GetProfile returns one profile.
func (s *Service) GetProfile(ctx context.Context, id string) (domain.PrivilegeProfile, error) {
	return s.store.GetProfile(ctx, id)
}

// CreateProfile validates and stores a new custom profile.
func (s *Service) CreateProfile(ctx context.Context, p *domain.Principal, in ProfileInput) (ProfileWrite, error) {
	if err := requireAdmin(p); err != nil {
		return ProfileWrite{}, err
	}
	prof := domain.PrivilegeProfile{Kind: domain.ProfileCustom}
	if err := s.apply(ctx, &prof, in); err != nil {
		return ProfileWrite{}, err
	}
	slug, err := s.freeSlug(ctx, privilege.Slugify(prof.Name))
	if err != nil {
		return ProfileWrite{}, err
	}
	prof.Slug = slug
	saved, err := s.store.CreateProfile(ctx, prof)
	if err != nil {
		return ProfileWrite{}, err
	}
	return ProfileWrite{Profile: saved, Confirmations: newConfirmations(nil, saved.Rules)}, nil
}

// CloneProfile copies a profile (also a built-in) under a new name; the
// copy is a custom profile. Confirmations carry over: they were given for
// the same rules.
func (s *Service) CloneProfile(ctx context.Context, p *domain.Principal, id, name string) (ProfileWrite, error) {
	if err := requireAdmin(p); err != nil {
		return ProfileWrite{}, err
	}
	src, err := s.store.GetProfile(ctx, id)
	if err != nil {
		return ProfileWrite{}, err
	}
	if strings.TrimSpace(name) == "" {
		name = src.Name + " (copy)"
	}
	rules, blocks := src.Rules, src.Blocks
	if src.Kind != domain.ProfileCustom {
		// A built-in's rights are not rules: the copy starts empty.
		rules, blocks = nil, nil
	}
	return s.CreateProfile(ctx, p, ProfileInput{Name: &name, Description: &src.Description, Rules: &rules, Blocks: &blocks})
}

// UpdateProfile changes a custom profile; built-ins are immutable.
func (s *Service) UpdateProfile(ctx context.Context, p *domain.Principal, id string, in ProfileInput) (ProfileWrite, error) {
	if err := requireAdmin(p); err != nil {
		return ProfileWrite{}, err
	}
	cur, err := s.store.GetProfile(ctx, id)
	if err != nil {
		return ProfileWrite{}, err
	}
	if cur.BuiltIn {
		return ProfileWrite{}, domain.Conflict("builtin_immutable", "built-in profiles cannot be changed: clone one")
	}
	old := cur.Rules
	if err := s.apply(ctx, &cur, in); err != nil {
		return ProfileWrite{}, err
	}
	saved, err := s.store.ReplaceProfile(ctx, cur)
	if err != nil {
		return ProfileWrite{}, err
	}
	return ProfileWrite{Profile: saved, Confirmations: newConfirmations(old, saved.Rules)}, nil
}

// DeleteProfile removes a custom profile that nothing uses.
func (s *Service) DeleteProfile(ctx context.Context, p *domain.Principal, id string) (domain.PrivilegeProfile, error) {
	if err := requireAdmin(p); err != nil {
		return domain.PrivilegeProfile{}, err
	}
	cur, err := s.store.GetProfile(ctx, id)
	if err != nil {
		return domain.PrivilegeProfile{}, err
	}
	if cur.BuiltIn {
		return cur, domain.Conflict("builtin_immutable", "built-in profiles cannot be deleted")
	}
	n, err := s.store.ProfileUseCount(ctx, id)
	if err != nil {
		return cur, err
	}
	if n > 0 {
		return cur, domain.Conflict("profile_in_use", fmt.Sprintf("the profile is used by %d Linux user assignment(s)", n))
	}
	return cur, s.store.DeleteProfile(ctx, id)
}

// apply validates in and writes it into prof.
func (s *Service) apply(ctx context.Context, prof *domain.PrivilegeProfile, in ProfileInput) error {
	if in.Name != nil {
		prof.Name = strings.TrimSpace(*in.Name)
	}
	if prof.Name == "" || len(prof.Name) > 128 {
		return domain.Invalid("invalid_name", "name is required (at most 128 characters)")
	}
	if in.Description != nil {
		if len(*in.Description) > 2048 {
			return domain.Invalid("invalid_description", "description is at most 2048 characters")
		}
		prof.Description = *in.Description
	}
	if in.Rules != nil {
		if len(*in.Rules) > 500 {
			return domain.Invalid(privilege.CodeTooLong, "a profile holds at most 500 rules")
		}
		norm, errs := privilege.ValidateAll(*in.Rules)
		if errs != nil {
			return rejected(errs)
		}
		prof.Rules = norm
	}
	if in.Blocks != nil {
		if len(*in.Blocks) > 100 {
			return domain.Invalid(privilege.CodeTooLong, "a profile uses at most 100 blocks")
		}
		for i, u := range *in.Blocks {
			b, err := s.store.GetBlock(ctx, u.BlockID)
			if err != nil {
				return domain.Invalid("unknown_block", fmt.Sprintf("block use %d: no profile block %q", i+1, u.BlockID))
			}
			if err := checkUse(b, u.Params); err != nil {
				err.Index = i
				return rejected([]*privilege.Error{err})
			}
		}
		prof.Blocks = *in.Blocks
	}
	return nil
}

// checkUse expands a block with params for every family it supports.
func checkUse(b domain.ProfileBlock, params map[string]string) *privilege.Error {
	tb := privilege.FromDomain(b)
	for _, f := range tb.SupportedFamilies() {
		if _, e := tb.Expand(f, params); e != nil {
			e.Message = fmt.Sprintf("block %q on %s: %s", b.Name, f, e.Message)
			return e
		}
	}
	return nil
}

func (s *Service) freeSlug(ctx context.Context, base string) (string, error) {
	for i := 1; i < 1000; i++ {
		slug := base
		if i > 1 {
			suffix := fmt.Sprintf("-%d", i)
			if len(base)+len(suffix) > 23 {
				slug = strings.TrimRight(base[:23-len(suffix)], "-")
			}
			slug += suffix
		}
		if _, err := s.store.GetProfileBySlug(ctx, slug); err != nil {
			if isNotFound(err) {
				return slug, nil
			}
			return "", err
		}
	}
	return "", domain.Conflict("duplicate", "no free profile slug for "+base)
}

// newConfirmations lists the confirmed dangerous rules in now that were not
// confirmed in before, as the argv people see.
func newConfirmations(before, now []domain.ProfileRule) []string {
	had := map[string]bool{}
	for _, r := range before {
		if r.Confirmed && privilege.Dangerous(r) != "" {
			had[ruleText(r)] = true
		}
	}
	var out []string
	for _, r := range now {
		if t := ruleText(r); r.Confirmed && privilege.Dangerous(r) != "" && !had[t] {
			out = append(out, t)
			had[t] = true
		}
	}
	return out
}

func ruleText(r domain.ProfileRule) string {
	s := strings.Join(r.Argv, " ")
	if r.RunAs != "" {
		s = "(" + r.RunAs + ") " + s
	}
	return s
}

// RenderProfile renders a profile for family: its own rules and its
// blocks' variants for that family.
func (s *Service) RenderProfile(ctx context.Context, prof domain.PrivilegeProfile, family string) (Rendered, error) {
	if !privilege.ValidFamily(family) {
		return Rendered{}, domain.Invalid(privilege.CodeUnknownFamily, fmt.Sprintf("unknown family %q (%s)", family, strings.Join(privilege.Families, ", ")))
	}
	out := Rendered{Family: family, ACLs: []domain.ProfileRule{}, Warnings: []string{}}
	switch prof.Kind {
	case domain.ProfileFullAdmin:
		out.AdminGroup = AdminGroup(family)
		return out, nil
	case domain.ProfileStandard:
		return out, nil
	}
	rules, warnings, err := s.expandProfile(ctx, prof, family)
	if err != nil {
		return Rendered{}, err
	}
	text, err := privilege.Render(prof.Slug, prof.Name, rules)
	if err != nil {
		return Rendered{}, err
	}
	out.Group, out.Path, out.Sudoers, out.Warnings = privilege.GroupName(prof.Slug), privilege.SudoersPath(prof.Slug), text, warnings
	for _, r := range rules {
		if r.Kind == privilege.KindACL {
			out.ACLs = append(out.ACLs, r)
		}
	}
	return out, nil
}

func (s *Service) expandProfile(ctx context.Context, prof domain.PrivilegeProfile, family string) ([]domain.ProfileRule, []string, error) {
	rules := append([]domain.ProfileRule(nil), prof.Rules...)
	warnings := []string{}
	for _, u := range prof.Blocks {
		b, err := s.store.GetBlock(ctx, u.BlockID)
		if err != nil {
			return nil, nil, err
		}
		tb := privilege.FromDomain(b)
		if _, ok := tb.Variant(family); !ok {
			warnings = append(warnings, fmt.Sprintf("block %q has no variant for %s and grants nothing there", b.Name, family))
			continue
		}
		r, e := tb.Expand(family, u.Params)
		if e != nil {
			return nil, nil, rejected([]*privilege.Error{e})
		}
		rules = append(rules, r...)
	}
	return rules, warnings, nil
}

// AdminGroup is the distribution's administrator group per family.
func AdminGroup(family string) string {
	if family == "apt" {
		return "sudo"
	}
	return "wheel"
}

// PreviewProfile renders an unsaved profile (the editor's live preview):
// the same validation as a save, nothing stored. id names the profile
// being edited ("" for a new one); its saved fields fill what in omits.
func (s *Service) PreviewProfile(ctx context.Context, id string, in ProfileInput, family string) (Rendered, error) {
	prof := domain.PrivilegeProfile{Kind: domain.ProfileCustom, Name: "preview"}
	if id != "" {
		cur, err := s.store.GetProfile(ctx, id)
		if err != nil {
			return Rendered{}, err
		}
		prof = cur
	}
	if err := s.apply(ctx, &prof, in); err != nil {
		return Rendered{}, err
	}
	if prof.Slug == "" {
		prof.Slug = privilege.Slugify(prof.Name)
	}
	return s.RenderProfile(ctx, prof, family)
}
