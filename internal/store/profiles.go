package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/lcmproject/lcm/internal/domain"
)

// ---- privilege profiles ----

// ListProfiles returns every privilege profile: built-ins first, then by name.
func (s *Store) ListProfiles(ctx context.Context) ([]domain.PrivilegeProfile, error) {
	var rows []privilegeProfileRow
	if err := s.conn(ctx).Order("built_in DESC").Order("name").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "privilege profiles")
	}
	return s.decorateProfiles(ctx, rows)
}

// GetProfile returns one privilege profile.
func (s *Store) GetProfile(ctx context.Context, id string) (domain.PrivilegeProfile, error) {
	var row privilegeProfileRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.PrivilegeProfile{}, mapErr(err, "privilege profile")
	}
	out, err := s.decorateProfiles(ctx, []privilegeProfileRow{row})
	if err != nil {
		return domain.PrivilegeProfile{}, err
	}
	return out[0], nil
}

// GetProfileBySlug returns the profile with slug.
func (s *Store) GetProfileBySlug(ctx context.Context, slug string) (domain.PrivilegeProfile, error) {
	var row privilegeProfileRow
	if err := s.conn(ctx).Where("slug = ?", slug).Take(&row).Error; err != nil {
		return domain.PrivilegeProfile{}, mapErr(err, "privilege profile")
	}
	return s.GetProfile(ctx, row.ID)
}

func (s *Store) decorateProfiles(ctx context.Context, rows []privilegeProfileRow) ([]domain.PrivilegeProfile, error) {
	out := make([]domain.PrivilegeProfile, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var uses []profileBlockUseRow
	if err := s.conn(ctx).Select("profile_id", "position", "block_id", "params").Where("profile_id IN ?", ids).
		Order("profile_id").Order("position").Find(&uses).Error; err != nil {
		return nil, mapErr(err, "profile block uses")
	}
	byProfile := map[string][]domain.BlockUse{}
	for _, u := range uses {
		bu := domain.BlockUse{BlockID: u.BlockID, Params: map[string]string{}}
		if err := json.Unmarshal([]byte(u.Params), &bu.Params); err != nil {
			return nil, errors.New("store: profile block use params: " + err.Error())
		}
		byProfile[u.ProfileID] = append(byProfile[u.ProfileID], bu)
	}
	for i, r := range rows {
		p := domain.PrivilegeProfile{ID: r.ID, Slug: r.Slug, Name: r.Name, Description: r.Description, Kind: r.Kind,
			BuiltIn: r.BuiltIn, Rules: []domain.ProfileRule{}, Blocks: byProfile[r.ID], CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		if err := json.Unmarshal([]byte(r.Rules), &p.Rules); err != nil {
			return nil, errors.New("store: profile rules: " + err.Error())
		}
		if p.Blocks == nil {
			p.Blocks = []domain.BlockUse{}
		}
		out[i] = p
	}
	return out, nil
}

func profileRowOf(p domain.PrivilegeProfile) (privilegeProfileRow, error) {
	rules := p.Rules
	if rules == nil {
		rules = []domain.ProfileRule{}
	}
	raw, err := json.Marshal(rules)
	if err != nil {
		return privilegeProfileRow{}, err
	}
	return privilegeProfileRow{ID: p.ID, Slug: p.Slug, Name: p.Name, Description: p.Description, Kind: p.Kind,
		BuiltIn: p.BuiltIn, Rules: string(raw)}, nil
}

func (s *Store) writeBlockUses(ctx context.Context, profileID string, uses []domain.BlockUse) error {
	if err := s.conn(ctx).Where("profile_id = ?", profileID).Delete(&profileBlockUseRow{}).Error; err != nil {
		return mapErr(err, "profile block uses")
	}
	for i, u := range uses {
		params := u.Params
		if params == nil {
			params = map[string]string{}
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return err
		}
		row := profileBlockUseRow{ProfileID: profileID, Position: i, BlockID: u.BlockID, Params: string(raw)}
		if err := s.conn(ctx).Omit("Profile", "Block").Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrForeignKeyViolated) {
				return domain.NotFound("profile block " + u.BlockID)
			}
			return mapErr(err, "profile block use")
		}
	}
	return nil
}

// CreateProfile stores a new profile (the service validated it).
func (s *Store) CreateProfile(ctx context.Context, p domain.PrivilegeProfile) (domain.PrivilegeProfile, error) {
	row, err := profileRowOf(p)
	if err != nil {
		return domain.PrivilegeProfile{}, err
	}
	row.ID = uuid.NewString()
	now := time.Now().UTC()
	row.CreatedAt, row.UpdatedAt = now, now
	err = s.InTx(ctx, func(tx *Store) error {
		if err := mapErr(tx.conn(ctx).Create(&row).Error, "privilege profile "+p.Name); err != nil {
			return err
		}
		return tx.writeBlockUses(ctx, row.ID, p.Blocks)
	})
	if err != nil {
		return domain.PrivilegeProfile{}, err
	}
	return s.GetProfile(ctx, row.ID)
}

// ReplaceProfile writes name, description, rules and block uses of an
// existing profile.
func (s *Store) ReplaceProfile(ctx context.Context, p domain.PrivilegeProfile) (domain.PrivilegeProfile, error) {
	row, err := profileRowOf(p)
	if err != nil {
		return domain.PrivilegeProfile{}, err
	}
	err = s.InTx(ctx, func(tx *Store) error {
		res := tx.conn(ctx).Model(&privilegeProfileRow{ID: p.ID}).Select("name", "description", "rules", "updated_at").
			Updates(&privilegeProfileRow{Name: row.Name, Description: row.Description, Rules: row.Rules, UpdatedAt: time.Now().UTC()})
		if err := mapErr(res.Error, "privilege profile "+p.Name); err != nil {
			return err
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("privilege profile")
		}
		return tx.writeBlockUses(ctx, p.ID, p.Blocks)
	})
	if err != nil {
		return domain.PrivilegeProfile{}, err
	}
	return s.GetProfile(ctx, p.ID)
}

// DeleteProfile removes a profile and its block uses.
func (s *Store) DeleteProfile(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.conn(ctx).Where("profile_id = ?", id).Delete(&profileBlockUseRow{}).Error; err != nil {
			return mapErr(err, "profile block uses")
		}
		res := tx.conn(ctx).Delete(&privilegeProfileRow{ID: id})
		if err := mapErr(res.Error, "privilege profile"); err != nil {
			return err
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("privilege profile")
		}
		return nil
	})
}

// UpsertBuiltinProfile creates or refreshes a built-in profile by slug.
func (s *Store) UpsertBuiltinProfile(ctx context.Context, p domain.PrivilegeProfile) error {
	p.BuiltIn = true
	row, err := profileRowOf(p)
	if err != nil {
		return err
	}
	var cur privilegeProfileRow
	err = s.conn(ctx).Where("slug = ?", p.Slug).Take(&cur).Error
	now := time.Now().UTC()
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		row.ID = uuid.NewString()
		row.CreatedAt, row.UpdatedAt = now, now
		return mapErr(s.conn(ctx).Create(&row).Error, "privilege profile "+p.Name)
	case err != nil:
		return mapErr(err, "privilege profile")
	}
	return mapErr(s.conn(ctx).Model(&privilegeProfileRow{ID: cur.ID}).Select("name", "description", "kind", "built_in", "rules", "updated_at").
		Updates(&privilegeProfileRow{Name: row.Name, Description: row.Description, Kind: row.Kind, BuiltIn: true, Rules: row.Rules, UpdatedAt: now}).Error,
		"privilege profile "+p.Name)
}

// ---- profile blocks ----

func blockRowOf(b domain.ProfileBlock) (profileBlockRow, error) {
	params := b.Params
	if params == nil {
		params = []domain.BlockParam{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return profileBlockRow{}, err
	}
	variants := b.Variants
	if variants == nil {
		variants = map[string][]domain.ProfileRule{}
	}
	v, err := json.Marshal(variants)
	if err != nil {
		return profileBlockRow{}, err
	}
	return profileBlockRow{ID: b.ID, Slug: b.Slug, Name: b.Name, Description: b.Description, BuiltIn: b.BuiltIn,
		Params: string(p), RunAs: b.RunAs, Variants: string(v)}, nil
}

func blockOf(r profileBlockRow) (domain.ProfileBlock, error) {
	b := domain.ProfileBlock{ID: r.ID, Slug: r.Slug, Name: r.Name, Description: r.Description, BuiltIn: r.BuiltIn,
		RunAs: r.RunAs, Params: []domain.BlockParam{}, Variants: map[string][]domain.ProfileRule{}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := json.Unmarshal([]byte(r.Params), &b.Params); err != nil {
		return b, errors.New("store: block params: " + err.Error())
	}
	if err := json.Unmarshal([]byte(r.Variants), &b.Variants); err != nil {
		return b, errors.New("store: block variants: " + err.Error())
	}
	return b, nil
}

// ListBlocks returns every profile block: built-ins first, then by name.
func (s *Store) ListBlocks(ctx context.Context) ([]domain.ProfileBlock, error) {
	var rows []profileBlockRow
	if err := s.conn(ctx).Order("built_in DESC").Order("name").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "profile blocks")
	}
	out := make([]domain.ProfileBlock, len(rows))
	for i, r := range rows {
		b, err := blockOf(r)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// GetBlock returns one profile block.
func (s *Store) GetBlock(ctx context.Context, id string) (domain.ProfileBlock, error) {
	var row profileBlockRow
	if err := s.conn(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.ProfileBlock{}, mapErr(err, "profile block")
	}
	return blockOf(row)
}

// CreateBlock stores a new block (the service validated it).
func (s *Store) CreateBlock(ctx context.Context, b domain.ProfileBlock) (domain.ProfileBlock, error) {
	row, err := blockRowOf(b)
	if err != nil {
		return domain.ProfileBlock{}, err
	}
	row.ID = uuid.NewString()
	now := time.Now().UTC()
	row.CreatedAt, row.UpdatedAt = now, now
	if err := mapErr(s.conn(ctx).Create(&row).Error, "profile block "+b.Name); err != nil {
		return domain.ProfileBlock{}, err
	}
	return s.GetBlock(ctx, row.ID)
}

// ReplaceBlock writes every changeable field of a block.
func (s *Store) ReplaceBlock(ctx context.Context, b domain.ProfileBlock) (domain.ProfileBlock, error) {
	row, err := blockRowOf(b)
	if err != nil {
		return domain.ProfileBlock{}, err
	}
	row.UpdatedAt = time.Now().UTC()
	res := s.conn(ctx).Model(&profileBlockRow{ID: b.ID}).Select("name", "description", "params", "run_as", "variants", "updated_at").Updates(&row)
	if err := mapErr(res.Error, "profile block "+b.Name); err != nil {
		return domain.ProfileBlock{}, err
	}
	if res.RowsAffected == 0 {
		return domain.ProfileBlock{}, domain.NotFound("profile block")
	}
	return s.GetBlock(ctx, b.ID)
}

// DeleteBlock removes a block that no profile uses.
func (s *Store) DeleteBlock(ctx context.Context, id string) error {
	return s.InTx(ctx, func(tx *Store) error {
		var n int64
		if err := tx.conn(ctx).Model(&profileBlockUseRow{}).Where("block_id = ?", id).Count(&n).Error; err != nil {
			return mapErr(err, "profile block uses")
		}
		if n > 0 {
			return domain.Conflict("block_in_use", "the block is used by a privilege profile")
		}
		res := tx.conn(ctx).Delete(&profileBlockRow{ID: id})
		if err := mapErr(res.Error, "profile block"); err != nil {
			return err
		}
		if res.RowsAffected == 0 {
			return domain.NotFound("profile block")
		}
		return nil
	})
}

// BlockUsage lists the profiles that use a block.
func (s *Store) BlockUsage(ctx context.Context, blockID string) ([]domain.PrivilegeProfile, error) {
	var ids []string
	if err := s.conn(ctx).Model(&profileBlockUseRow{}).Distinct("profile_id").Where("block_id = ?", blockID).Pluck("profile_id", &ids).Error; err != nil {
		return nil, mapErr(err, "profile block uses")
	}
	if len(ids) == 0 {
		return []domain.PrivilegeProfile{}, nil
	}
	var rows []privilegeProfileRow
	if err := s.conn(ctx).Where("id IN ?", ids).Order("name").Find(&rows).Error; err != nil {
		return nil, mapErr(err, "privilege profiles")
	}
	return s.decorateProfiles(ctx, rows)
}

// UpsertBuiltinBlock creates or refreshes a built-in block by slug.
func (s *Store) UpsertBuiltinBlock(ctx context.Context, b domain.ProfileBlock) error {
	b.BuiltIn = true
	row, err := blockRowOf(b)
	if err != nil {
		return err
	}
	var cur profileBlockRow
	err = s.conn(ctx).Where("slug = ?", b.Slug).Take(&cur).Error
	now := time.Now().UTC()
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		row.ID = uuid.NewString()
		row.CreatedAt, row.UpdatedAt = now, now
		return mapErr(s.conn(ctx).Create(&row).Error, "profile block "+b.Name)
	case err != nil:
		return mapErr(err, "profile block")
	}
	row.UpdatedAt = now
	return mapErr(s.conn(ctx).Model(&profileBlockRow{ID: cur.ID}).Select("name", "description", "built_in", "params", "run_as", "variants", "updated_at").
		Updates(&row).Error, "profile block "+b.Name)
}
