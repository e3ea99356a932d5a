package linuxusers

import (
	"context"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/privilege"
)

// BlockInput is a block's changeable fields; nil fields stay.
type BlockInput struct {
	Name        *string
	Description *string
	Params      *[]domain.BlockParam
	RunAs       *string
	Variants    *map[string][]domain.ProfileRule
}

// BlockPreview is a block rendered for one family.
type BlockPreview struct {
	Family  string               `json:"family"`
	Rules   []domain.ProfileRule `json:"rules"`
	Sudoers string               `json:"sudoers"`
	ACLs    []domain.ProfileRule `json:"acls"`
}

// ListBlocks returns every block.
func (s *Service) ListBlocks(ctx context.Context) ([]domain.ProfileBlock, error) {
	return s.store.ListBlocks(ctx)
}

// CreateBlock validates and stores a custom block.
func (s *Service) CreateBlock(ctx context.Context, p *domain.Principal, in BlockInput) (domain.ProfileBlock, error) {
	if err := requireAdmin(p); err != nil {
		return domain.ProfileBlock{}, err
	}
	var b domain.ProfileBlock
	if err := applyBlock(&b, in); err != nil {
		return domain.ProfileBlock{}, err
	}
	b.Slug = privilege.Slugify(b.Name) + "-" + shortID()
	return s.store.CreateBlock(ctx, b)
}

// CloneBlock copies a block (also a built-in) as a custom block.
func (s *Service) CloneBlock(ctx context.Context, p *domain.Principal, id, name string) (domain.ProfileBlock, error) {
	if err := requireAdmin(p); err != nil {
		return domain.ProfileBlock{}, err
	}
	src, err := s.store.GetBlock(ctx, id)
	if err != nil {
		return domain.ProfileBlock{}, err
	}
	if strings.TrimSpace(name) == "" {
		name = src.Name + " (copy)"
	}
	return s.CreateBlock(ctx, p, BlockInput{Name: &name, Description: &src.Description, Params: &src.Params, RunAs: &src.RunAs, Variants: &src.Variants})
}

// UpdateBlock changes a custom block; profiles using it must still render.
func (s *Service) UpdateBlock(ctx context.Context, p *domain.Principal, id string, in BlockInput) (domain.ProfileBlock, error) {
	if err := requireAdmin(p); err != nil {
		return domain.ProfileBlock{}, err
	}
	b, err := s.store.GetBlock(ctx, id)
	if err != nil {
		return domain.ProfileBlock{}, err
	}
	if b.BuiltIn {
		return domain.ProfileBlock{}, domain.Conflict("builtin_immutable", "built-in blocks cannot be changed: clone one")
	}
	if err := applyBlock(&b, in); err != nil {
		return domain.ProfileBlock{}, err
	}
	users, err := s.store.BlockUsage(ctx, id)
	if err != nil {
		return domain.ProfileBlock{}, err
	}
	for _, prof := range users {
		for _, u := range prof.Blocks {
			if u.BlockID != id {
				continue
			}
			if e := checkUse(b, u.Params); e != nil {
				e.Message = "profile " + prof.Name + ": " + e.Message
				return domain.ProfileBlock{}, rejected([]*privilege.Error{e})
			}
		}
	}
	return s.store.ReplaceBlock(ctx, b)
}

// DeleteBlock removes a custom block no profile uses.
func (s *Service) DeleteBlock(ctx context.Context, p *domain.Principal, id string) (domain.ProfileBlock, error) {
	if err := requireAdmin(p); err != nil {
		return domain.ProfileBlock{}, err
	}
	b, err := s.store.GetBlock(ctx, id)
	if err != nil {
		return domain.ProfileBlock{}, err
	}
	if b.BuiltIn {
		return b, domain.Conflict("builtin_immutable", "built-in blocks cannot be deleted")
	}
	return b, s.store.DeleteBlock(ctx, id)
}

// BlockUsage lists the profiles using a block.
func (s *Service) BlockUsage(ctx context.Context, id string) ([]domain.PrivilegeProfile, error) {
	if _, err := s.store.GetBlock(ctx, id); err != nil {
		return nil, err
	}
	return s.store.BlockUsage(ctx, id)
}

// PreviewBlock renders a block for family with params (missing params take
// the examples): the exact sudoers lines.
func (s *Service) PreviewBlock(ctx context.Context, id, family string, params map[string]string) (BlockPreview, error) {
	b, err := s.store.GetBlock(ctx, id)
	if err != nil {
		return BlockPreview{}, err
	}
	tb := privilege.FromDomain(b)
	full := tb.ExampleParams()
	for k, v := range params {
		full[k] = v
	}
	rules, e := tb.Expand(family, full)
	if e != nil {
		return BlockPreview{}, rejected([]*privilege.Error{e})
	}
	text, err := privilege.Render("preview", b.Name, rules)
	if err != nil {
		return BlockPreview{}, err
	}
	out := BlockPreview{Family: family, Rules: rules, ACLs: []domain.ProfileRule{}}
	// The preview shows the lines as a profile group renders them.
	lines := strings.SplitN(text, "\n", 2)
	if len(lines) == 2 {
		out.Sudoers = lines[1]
	}
	for _, r := range rules {
		if r.Kind == privilege.KindACL {
			out.ACLs = append(out.ACLs, r)
		}
	}
	return out, nil
}

func applyBlock(b *domain.ProfileBlock, in BlockInput) error {
	if in.Name != nil {
		b.Name = strings.TrimSpace(*in.Name)
	}
	if len(b.Name) > 128 {
		return domain.Invalid("invalid_name", "name is at most 128 characters")
	}
	if in.Description != nil {
		if len(*in.Description) > 2048 {
			return domain.Invalid("invalid_description", "description is at most 2048 characters")
		}
		b.Description = *in.Description
	}
	if in.Params != nil {
		b.Params = *in.Params
	}
	if in.RunAs != nil {
		b.RunAs = *in.RunAs
		if b.RunAs == "root" {
			b.RunAs = ""
		}
	}
	if in.Variants != nil {
		b.Variants = *in.Variants
	}
	if e := privilege.CheckBlock(privilege.FromDomain(*b)); e != nil {
		return rejected([]*privilege.Error{e})
	}
	// Store the templates normalized, as they render.
	for f, rules := range b.Variants {
		for i := range rules {
			rules[i] = privilege.Normalize(rules[i])
		}
		b.Variants[f] = rules
	}
	return nil
}
