// Package linuxusers is the Linux users service: the catalogue of people
// who get accounts on servers, the privilege profiles and profile blocks
// that give them sudo rights, and their provisioning to servers and groups.
// Content that runs as root (the catalogue, profiles and blocks) is
// admin-only to change, whatever permissions a custom role holds.
package linuxusers

import (
	"context"
	"log/slog"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/privilege"
	"github.com/lcmproject/lcm/internal/store"
)

// Service manages Linux users, privilege profiles and profile blocks.
type Service struct {
	store *store.Store
	jobs  *jobs.Service
	log   *slog.Logger
}

// New returns the service.
func New(st *store.Store, js *jobs.Service, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: st, jobs: js, log: log}
}

// Built-in profile slugs.
const (
	SlugFullAdmin = "full-admin"
	SlugStandard  = "standard"
)

// builtinProfiles are the two immutable profiles.
var builtinProfiles = []domain.PrivilegeProfile{
	{Slug: SlugFullAdmin, Name: "Full administrator", Kind: domain.ProfileFullAdmin,
		Description: "Full root rights through the distribution's administrator group (sudo or wheel)."},
	{Slug: SlugStandard, Name: "Standard user", Kind: domain.ProfileStandard,
		Description: "A login without sudo rights."},
}

// SeedBuiltins creates or refreshes the built-in profiles and blocks; it
// runs at every start, so a new release's built-ins arrive on upgrade.
func (s *Service) SeedBuiltins(ctx context.Context) error {
	for _, p := range builtinProfiles {
		if err := s.store.UpsertBuiltinProfile(ctx, p); err != nil {
			return err
		}
	}
	for _, b := range privilege.Builtins() {
		if err := s.store.UpsertBuiltinBlock(ctx, b.ToDomain()); err != nil {
			return err
		}
	}
	return nil
}

// requireAdmin refuses a change to root-run content by anyone but an admin.
func requireAdmin(p *domain.Principal) error {
	if p == nil || !p.IsAdmin() {
		return domain.Forbidden("only administrators change content that runs as root (Linux users, privilege profiles, profile blocks)")
	}
	return nil
}

// rejected turns validation rejections into one invalid-input error whose
// code is the first rejection's and whose details list them all.
func rejected(errs []*privilege.Error) error {
	return &domain.Error{Kind: domain.ErrInvalid, Code: errs[0].Code, Message: errs[0].Error(), Details: errs}
}
