package automation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/store"
)

// MaxRunSelection bounds a custom action run's server list.
const MaxRunSelection = 1000

// CustomActionInput is a custom action as created or changed.
type CustomActionInput struct {
	Name             *string
	Description      *string
	Commands         *[]string
	RequiresApproval *bool
}

// CommandsDigest identifies a command list (an approval of a custom action
// run is for exactly these commands: an edit needs a new approval).
func CommandsDigest(commands []string) string {
	raw, _ := json.Marshal(commands)
	sum := sha256.Sum256(raw)
	return "commands:" + hex.EncodeToString(sum[:])
}

// adminOnly: custom actions run as root, so only admins edit them.
func adminOnly(p *domain.Principal) error {
	if !p.IsAdmin() {
		return domain.Forbidden("custom actions run as root on servers: only administrators create, change or delete them")
	}
	return nil
}

// ListCustomActions returns every custom action.
func (s *Service) ListCustomActions(ctx context.Context) ([]domain.CustomAction, error) {
	return s.o.Store.ListCustomActions(ctx)
}

// GetCustomAction returns one custom action.
func (s *Service) GetCustomAction(ctx context.Context, id string) (domain.CustomAction, error) {
	if id == "" || len(id) > 36 {
		return domain.CustomAction{}, domain.NotFound("custom action")
	}
	return s.o.Store.GetCustomAction(ctx, id)
}

// SaveCustomAction creates (id "") or changes a custom action (admins).
func (s *Service) SaveCustomAction(ctx context.Context, p *domain.Principal, id string, in CustomActionInput) (domain.CustomAction, error) {
	if err := adminOnly(p); err != nil {
		return domain.CustomAction{}, err
	}
	var a domain.CustomAction
	if id != "" {
		var err error
		if a, err = s.GetCustomAction(ctx, id); err != nil {
			return domain.CustomAction{}, err
		}
	} else if in.Name == nil || in.Commands == nil {
		return domain.CustomAction{}, domain.Invalid("invalid_request", "name and commands are required")
	}
	if in.Name != nil {
		n, err := validName(*in.Name)
		if err != nil {
			return domain.CustomAction{}, err
		}
		a.Name = n
	}
	if in.Description != nil {
		d := strings.TrimSpace(*in.Description)
		if len(d) > 1024 || strings.ContainsRune(d, 0) {
			return domain.CustomAction{}, domain.Invalid("invalid_description", "description is at most 1024 characters")
		}
		a.Description = d
	}
	if in.Commands != nil {
		c, err := ValidCommands(*in.Commands)
		if err != nil {
			return domain.CustomAction{}, err
		}
		a.Commands = c
	}
	if in.RequiresApproval != nil {
		a.RequiresApproval = *in.RequiresApproval
	}
	return s.o.Store.SaveCustomAction(ctx, a)
}

// DeleteCustomAction removes a custom action (admins).
func (s *Service) DeleteCustomAction(ctx context.Context, p *domain.Principal, id string) (domain.CustomAction, error) {
	if err := adminOnly(p); err != nil {
		return domain.CustomAction{}, err
	}
	a, err := s.GetCustomAction(ctx, id)
	if err != nil {
		return domain.CustomAction{}, err
	}
	return a, s.o.Store.DeleteCustomAction(ctx, id)
}

// RunTarget is where a custom action runs: a selection or a group.
type RunTarget struct {
	ServerIDs []string
	GroupID   string
}

// RunCustomAction runs a custom action as jobs on the visible servers of
// a selection or a group (one bulk run; each job's output is live in the
// job console). Servers in restricted sudo mode are refused with
// restricted_mode; a single server in that mode fails the whole request.
func (s *Service) RunCustomAction(ctx context.Context, p *domain.Principal, id string, t RunTarget) (domain.BulkRun, error) {
	a, err := s.GetCustomAction(ctx, id)
	if err != nil {
		return domain.BulkRun{}, err
	}
	if (len(t.ServerIDs) > 0) == (t.GroupID != "") {
		return domain.BulkRun{}, domain.Invalid("invalid_target", "give exactly one target: server_ids (a non-empty list) or group_id")
	}
	if len(t.ServerIDs) > MaxRunSelection {
		return domain.BulkRun{}, domain.Invalid("selection_too_large", fmt.Sprintf("at most %d server ids; use group_id", MaxRunSelection))
	}
	for _, sid := range t.ServerIDs {
		if sid == "" || len(sid) > 36 {
			return domain.BulkRun{}, domain.Invalid("invalid_server_id", "server_ids must hold server ids")
		}
	}
	if t.GroupID != "" {
		if _, err := s.visibleGroup(ctx, p, t.GroupID); err != nil {
			return domain.BulkRun{}, err
		}
	}
	if a.RequiresApproval && s.o.Approvals == nil {
		return domain.BulkRun{}, domain.Conflict("approval_unavailable", "this custom action requires approval and no approvals service is configured")
	}
	sc := store.ScopeOf(p)
	targets, missing, err := s.o.Store.BulkTargets(ctx, sc, t.ServerIDs, t.GroupID, false)
	if err != nil {
		return domain.BulkRun{}, err
	}
	if len(missing) > 0 {
		return domain.BulkRun{}, domain.NotFound("server")
	}
	if len(targets) == 0 {
		return domain.BulkRun{}, domain.Invalid("no_servers", "the target holds no servers")
	}
	ids := make([]string, len(targets))
	names := make([]string, len(targets))
	for i, tg := range targets {
		ids[i], names[i] = tg.ID, tg.Name
	}
	if a.RequiresApproval {
		// The approval is for this requester, exactly these servers and
		// exactly these commands.
		bind := domain.ApprovalBinding{Targets: ids, Action: CommandsDigest(a.Commands),
			Detail: map[string]any{"custom_action": a.Name, "commands": a.Commands, "servers": names, "group_id": t.GroupID}}
		if err := s.o.Approvals.Check(ctx, ApprovalCustomActionRun, a.ID, p, a.Name, bind); err != nil {
			return domain.BulkRun{}, err
		}
	}
	var refused []domain.BulkItem
	var list []jobs.BulkJob
	params := actions.CustomParams{ActionID: a.ID, Name: a.Name, Commands: a.Commands}
	restricted := map[string]bool{}
	for _, sid := range ids {
		srv, err := s.o.Store.GetServer(ctx, store.SystemScope, sid)
		if err == nil && srv.Hardening.SudoMode == domain.SudoRestricted {
			restricted[sid] = true
		}
	}
	if len(t.ServerIDs) == 1 && restricted[ids[0]] {
		return domain.BulkRun{}, domain.Conflict("restricted_mode", "custom actions are blocked: the management user's sudo is restricted on this server (full mode is needed)")
	}
	for _, tg := range targets {
		switch {
		case !tg.Joined:
			refused = append(refused, domain.BulkItem{ServerID: tg.ID, ServerName: tg.Name, Refused: "not_joined", Reason: "the server has not joined yet"})
		case restricted[tg.ID]:
			refused = append(refused, domain.BulkItem{ServerID: tg.ID, ServerName: tg.Name, Refused: "restricted_mode",
				Reason: "custom actions are blocked: the management user's sudo is restricted on this server"})
		default:
			list = append(list, jobs.BulkJob{Target: tg, Kind: domain.JobCustomAction, Params: params})
		}
	}
	target := domain.BulkTargetServers
	if t.GroupID != "" {
		target = domain.BulkTargetGroup
	}
	run := domain.BulkRun{Action: "custom-action:" + a.Name, Kind: domain.JobCustomAction, Target: target, GroupID: t.GroupID}
	if p != nil {
		run.CreatedBy = p.UserID
	}
	return s.o.Jobs.SubmitBulk(ctx, run, list, refused)
}
