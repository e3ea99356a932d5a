package schedule

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// SettingsStore keeps the overrides in the "schedules" setting: the
// Options.Overrides and Options.SaveOverrides of lcm-api. Every change is
// audited as settings.schedules_updated with the task names it overrides.
func SettingsStore(st *store.Store, log *slog.Logger) (
	load func(ctx context.Context) (map[string]Override, error),
	save func(ctx context.Context, actor *domain.Principal, m map[string]Override) error,
) {
	load = func(ctx context.Context) (map[string]Override, error) {
		m := map[string]Override{}
		_, err := st.GetSetting(ctx, SettingKey, &m)
		return m, err
	}
	save = func(ctx context.Context, actor *domain.Principal, m map[string]Override) error {
		if err := st.PutSetting(ctx, SettingKey, m); err != nil {
			return err
		}
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		slices.Sort(names)
		audit.Append(ctx, st, log, actor, store.AuditEntry{At: time.Now().UTC(), Action: "settings.schedules_updated",
			Target: audit.Target("settings", SettingKey), Details: map[string]any{"overridden": names}})
		return nil
	}
	return load, save
}
