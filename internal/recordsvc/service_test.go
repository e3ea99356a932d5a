package recordsvc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/records"
)

func isKind(err, kind error) bool { return errors.Is(err, kind) }

func TestAccessMatrix(t *testing.T) {
	eachDB(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		z := f.zone(t, f.project.ID, "access.example")
		g, err := f.svc.CreateSyncGroup(ctx, f.owner, SyncGroupInput{Name: "g", Priority: 1})
		require.NoError(t, err)
		tpl, err := f.svc.CreateTemplate(ctx, f.owner, f.project.ID, TemplateInput{Name: "t", Sets: []records.RecordSet{rs("t", "A", "192.0.2.1")}})
		require.NoError(t, err)
		src, err := f.svc.CreateSourceHost(ctx, f.owner, f.project.ID, SourceInput{Name: "s", IPv4: []string{"192.0.2.2"}})
		require.NoError(t, err)
		n := 0
		uniq := func() string {
			n++
			return "n" + strings.Repeat("x", n%3) + string(rune('a'+n%26)) + uuid.NewString()[:6]
		}
		type op struct {
			name string
			fn   func(p *domain.Principal) error
			want [5]string // owner, editor, viewer, stranger, admin
		}
		ops := []op{
			{"get project", func(p *domain.Principal) error { _, err := f.svc.GetProject(ctx, p, f.project.ID); return err }, [5]string{"ok", "ok", "ok", "404", "ok"}},
			{"list members", func(p *domain.Principal) error { _, err := f.svc.ListMembers(ctx, p, f.project.ID); return err }, [5]string{"ok", "ok", "ok", "404", "ok"}},
			{"list zones", func(p *domain.Principal) error { _, err := f.svc.ListZones(ctx, p, f.project.ID); return err }, [5]string{"ok", "ok", "ok", "404", "ok"}},
			{"get zone", func(p *domain.Principal) error { _, err := f.svc.GetZone(ctx, p, z.ID); return err }, [5]string{"ok", "ok", "ok", "404", "ok"}},
			{"export zone", func(p *domain.Principal) error { _, err := f.svc.ExportZone(ctx, p, z.ID); return err }, [5]string{"ok", "ok", "ok", "404", "ok"}},
			{"list sets", func(p *domain.Principal) error { _, err := f.svc.ListRecordSets(ctx, p, z.ID); return err }, [5]string{"ok", "ok", "ok", "404", "ok"}},
			{"get template", func(p *domain.Principal) error { _, err := f.svc.GetTemplate(ctx, p, tpl.ID); return err }, [5]string{"ok", "ok", "ok", "404", "ok"}},
			{"get source", func(p *domain.Principal) error { _, err := f.svc.GetSourceHost(ctx, p, src.ID); return err }, [5]string{"ok", "ok", "ok", "404", "ok"}},
			{"create zone", func(p *domain.Principal) error {
				_, err := f.svc.CreateZone(ctx, p, f.project.ID, ZoneInput{Name: uniq() + ".example"})
				return err
			}, [5]string{"ok", "ok", "403", "404", "ok"}},
			{"create set", func(p *domain.Principal) error {
				_, err := f.svc.CreateRecordSet(ctx, p, z.ID, rs(uniq(), "A", "192.0.2.1"))
				return err
			}, [5]string{"ok", "ok", "403", "404", "ok"}},
			{"update zone", func(p *domain.Principal) error {
				_, err := f.svc.UpdateZone(ctx, p, z.ID, ZoneInput{DefaultTTL: new(int64(300))})
				return err
			}, [5]string{"ok", "ok", "403", "404", "ok"}},
			{"create template", func(p *domain.Principal) error {
				_, err := f.svc.CreateTemplate(ctx, p, f.project.ID, TemplateInput{Name: uniq(), Sets: []records.RecordSet{}})
				return err
			}, [5]string{"ok", "ok", "403", "404", "ok"}},
			{"create source", func(p *domain.Principal) error {
				_, err := f.svc.CreateSourceHost(ctx, p, f.project.ID, SourceInput{Name: uniq()})
				return err
			}, [5]string{"ok", "ok", "403", "404", "ok"}},
			{"update source", func(p *domain.Principal) error {
				_, err := f.svc.UpdateSourceHost(ctx, p, src.ID, SourceInput{Name: "s", IPv4: []string{"192.0.2.2"}})
				return err
			}, [5]string{"ok", "ok", "403", "404", "ok"}},
			{"update project", func(p *domain.Principal) error {
				_, err := f.svc.UpdateProject(ctx, p, f.project.ID, ProjectInput{Name: "web"})
				return err
			}, [5]string{"ok", "403", "403", "404", "ok"}},
			{"add member", func(p *domain.Principal) error {
				u := addUser(t, f.st, uniq(), false)
				_, err := f.svc.AddMember(ctx, p, f.project.ID, MemberInput{UserID: u.UserID, Role: RoleViewer})
				return err
			}, [5]string{"ok", "403", "403", "404", "ok"}},
			{"get sync group", func(p *domain.Principal) error { _, err := f.svc.GetSyncGroup(ctx, p, g.ID); return err }, [5]string{"ok", "404", "404", "404", "ok"}},
			{"update sync group sets", func(p *domain.Principal) error {
				_, err := f.svc.UpdateSyncGroupSets(ctx, p, g.ID, []records.RecordSet{})
				return err
			}, [5]string{"ok", "404", "404", "404", "ok"}},
		}
		who := []*domain.Principal{f.owner, f.editor, f.viewer, f.stranger, f.admin}
		names := []string{"owner", "editor", "viewer", "stranger", "admin"}
		for _, o := range ops {
			for i, p := range who {
				assert.Equal(t, o.want[i], kindOf(o.fn(p)), "%s as %s", o.name, names[i])
			}
		}
		assert.Equal(t, "401", kindOf(func() error { _, err := f.svc.ListProjects(ctx, nil); return err }()))

		// Sync group membership needs editor in the zone's project.
		eg, err := f.svc.CreateSyncGroup(ctx, f.viewer, SyncGroupInput{Name: "viewer's", Priority: 1})
		require.NoError(t, err)
		_, err = f.svc.AddSyncGroupMember(ctx, f.viewer, eg.ID, z.ID)
		assert.Equal(t, "403", kindOf(err), "a viewer cannot put a zone in a group")
		_, err = f.svc.AddSyncGroupMember(ctx, f.stranger, eg.ID, z.ID)
		assert.Equal(t, "404", kindOf(err), "someone else's group is invisible")

		// Project lists: members see theirs, admins all, strangers none.
		for i, p := range who {
			ps, err := f.svc.ListProjects(ctx, p)
			require.NoError(t, err)
			assert.Equal(t, names[i] != "stranger", len(ps) == 1, names[i])
		}
		assert.Equal(t, "403", kindOf(f.svc.DeleteProject(ctx, f.editor, f.project.ID)))
		assert.Equal(t, "409", kindOf(f.svc.RemoveMember(ctx, f.owner, f.project.ID, f.owner.UserID)), "last owner stays")
		require.NoError(t, f.svc.DeleteProject(ctx, f.owner, f.project.ID))
		_, err = f.svc.GetZone(ctx, f.admin, z.ID)
		assert.Equal(t, "404", kindOf(err))
	})
}

func TestEnforcementReports(t *testing.T) {
	eachDB(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		za := f.zone(t, f.project.ID, "a.example")
		other, err := f.svc.CreateProject(ctx, f.editor, ProjectInput{Name: "other"})
		require.NoError(t, err)
		_, err = f.svc.AddMember(ctx, f.editor, other.ID, MemberInput{UserID: f.owner.UserID, Role: RoleEditor})
		require.NoError(t, err)
		zb := f.zone(t, other.ID, "b.example") // groups span projects
		for _, s := range []records.RecordSet{rs("www", "A", "192.0.2.9"), rs("alias", "CNAME", "elsewhere.example."), rs("same", "A", "192.0.2.7")} {
			_, err := f.svc.CreateRecordSet(ctx, f.editor, za.ID, s)
			require.NoError(t, err)
		}
		high, err := f.svc.CreateSyncGroup(ctx, f.owner, SyncGroupInput{Name: "high", Priority: 5})
		require.NoError(t, err)
		low, err := f.svc.CreateSyncGroup(ctx, f.owner, SyncGroupInput{Name: "low", Priority: 10})
		require.NoError(t, err)
		_, err = f.svc.AddSyncGroupMember(ctx, f.owner, high.ID, zb.ID)
		require.NoError(t, err)
		for _, z := range []string{za.ID, zb.ID} {
			rep, err := f.svc.AddSyncGroupMember(ctx, f.owner, low.ID, z)
			require.NoError(t, err)
			assert.Empty(t, rep.Applied)
		}
		reps, err := f.svc.UpdateSyncGroupSets(ctx, f.owner, high.ID, []records.RecordSet{rs("@", "TXT", "owned by high")})
		require.NoError(t, err)
		require.Len(t, reps, 1)
		assert.Equal(t, []string{"@ TXT"}, reps[0].Applied)

		desired := []records.RecordSet{rs("www", "A", "192.0.2.1"), rs("alias", "A", "192.0.2.2"),
			rs("@", "TXT", "owned by low"), rs("api", "A", "192.0.2.3"), rs("same", "A", "192.0.2.7"),
			rs("@", "MX", "10 mail")}
		want := map[string]records.Report{
			za.ID: {ZoneID: za.ID, Applied: []string{"@ MX", "@ TXT", "api A", "same A"}, SkippedPriority: []string{}, Conflicts: []string{"alias A", "www A"}},
			zb.ID: {ZoneID: zb.ID, Applied: []string{"@ MX", "alias A", "api A", "same A", "www A"}, SkippedPriority: []string{"@ TXT"}, Conflicts: []string{}},
		}
		f.changed = nil
		reps, err = f.svc.UpdateSyncGroupSets(ctx, f.owner, low.ID, desired)
		require.NoError(t, err)
		require.Len(t, reps, 2)
		for _, r := range reps {
			assert.Equal(t, want[r.ZoneID], r)
		}
		assert.Len(t, f.changed, 1)
		assert.ElementsMatch(t, []string{za.ID, zb.ID}, f.changed[0])
		a, b := f.sets(t, za.ID), f.sets(t, zb.ID)
		assert.Equal(t, []string{"192.0.2.9"}, a["www A"].Records, "manual data is never overwritten")
		assert.Equal(t, "manual", a["same A"].OriginKind, "an equal manual set stays manual")
		assert.Equal(t, []string{"10 mail.a.example."}, a["@ MX"].Records, "relative names resolve per zone")
		assert.Equal(t, []string{"10 mail.b.example."}, b["@ MX"].Records)
		assert.Equal(t, "syncgroup", b["www A"].OriginKind)
		assert.Equal(t, low.ID, b["www A"].OriginID)
		assert.Equal(t, high.ID, b["@ TXT"].OriginID, "the higher priority keeps its set")

		// A second identical call changes nothing, not even serials.
		sa, sb := f.serial(t, za.ID), f.serial(t, zb.ID)
		f.changed = nil
		again, err := f.svc.UpdateSyncGroupSets(ctx, f.owner, low.ID, desired)
		require.NoError(t, err)
		assert.Equal(t, reps, again)
		assert.Equal(t, sa, f.serial(t, za.ID))
		assert.Equal(t, sb, f.serial(t, zb.ID))
		assert.Empty(t, f.changed)

		// Sets the group no longer defines leave the zones it owned them in.
		_, err = f.svc.UpdateSyncGroupSets(ctx, f.owner, low.ID, []records.RecordSet{rs("api", "A", "192.0.2.4")})
		require.NoError(t, err)
		a, b = f.sets(t, za.ID), f.sets(t, zb.ID)
		assert.NotContains(t, b, "www A")
		assert.NotContains(t, b, "@ MX")
		assert.Contains(t, b, "@ TXT", "another group's set stays")
		assert.Contains(t, a, "www A", "manual sets stay")
		assert.Contains(t, a, "same A", "the equal manual set was never the group's")
		assert.Equal(t, []string{"192.0.2.4"}, b["api A"].Records)
		assert.Greater(t, f.serial(t, zb.ID), sb)

		// Removing a zone from a group removes the group's sets there.
		require.NoError(t, f.svc.RemoveSyncGroupMember(ctx, f.owner, low.ID, za.ID))
		assert.NotContains(t, f.sets(t, za.ID), "api A")
		// Deleting the group removes its sets everywhere.
		require.NoError(t, f.svc.DeleteSyncGroup(ctx, f.owner, high.ID))
		assert.NotContains(t, f.sets(t, zb.ID), "@ TXT")

		// Hand edits of enforced sets are refused; deletion is allowed.
		set := f.sets(t, zb.ID)["api A"]
		_, err = f.svc.UpdateRecordSet(ctx, f.owner, zb.ID, set.ID, rs("api", "A", "192.0.2.5"))
		assert.Equal(t, "409", kindOf(err))
		require.NoError(t, f.svc.DeleteRecordSet(ctx, f.owner, zb.ID, set.ID))

		// Malformed sets are refused as a whole, nothing is written.
		_, err = f.svc.UpdateSyncGroupSets(ctx, f.owner, low.ID, []records.RecordSet{rs("x", "A", "300.1.1.1")})
		assert.Equal(t, "400", kindOf(err))
		_, err = f.svc.UpdateSyncGroupSets(ctx, f.owner, low.ID, nil)
		assert.Equal(t, "400", kindOf(err))
	})
}

func TestSourcePropagation(t *testing.T) {
	eachDB(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		src, err := f.svc.CreateSourceHost(ctx, f.editor, f.project.ID, SourceInput{Name: "web-1", IPv4: []string{"192.0.2.10"}})
		require.NoError(t, err)
		var zones []string
		for _, n := range []string{"p1.example", "p2.example", "p3.example"} {
			z := f.zone(t, f.project.ID, n)
			zones = append(zones, z.ID)
			set, err := f.svc.BindSourceHost(ctx, f.editor, src.ID, BindInput{ZoneID: z.ID, Name: "www", Type: "A"})
			require.NoError(t, err)
			assert.Equal(t, []string{"192.0.2.10"}, set.Records)
		}
		// Claim a manual set; an AAAA binding without addresses is empty.
		_, err = f.svc.CreateRecordSet(ctx, f.editor, zones[0], rs("api", "A", "198.51.100.1"))
		require.NoError(t, err)
		_, err = f.svc.BindSourceHost(ctx, f.editor, src.ID, BindInput{ZoneID: zones[0], Name: "api", Type: "a"})
		require.NoError(t, err)
		v6, err := f.svc.BindSourceHost(ctx, f.editor, src.ID, BindInput{ZoneID: zones[1], Name: "www", Type: "AAAA"})
		require.NoError(t, err)
		assert.Empty(t, v6.Records)
		_, err = f.svc.BindSourceHost(ctx, f.editor, src.ID, BindInput{ZoneID: zones[1], Name: "www", Type: "AAAA"})
		require.NoError(t, err, "binding twice is fine")
		_, err = f.svc.BindSourceHost(ctx, f.editor, src.ID, BindInput{ZoneID: zones[1], Name: "www", Type: "TXT"})
		assert.Equal(t, "400", kindOf(err))
		_, err = f.svc.UpdateRecordSet(ctx, f.editor, zones[0], f.sets(t, zones[0])["www A"].ID, rs("www", "A", "192.0.2.99"))
		assert.Equal(t, "409", kindOf(err), "bound sets are not edited by hand")

		before := map[string]uint32{}
		for _, z := range zones {
			before[z] = f.serial(t, z)
		}
		f.changed = nil
		got, err := f.svc.UpdateSourceHost(ctx, f.editor, src.ID, SourceInput{Name: "web-1",
			IPv4: []string{"192.0.2.12", "192.0.2.11", "192.0.2.11"}, IPv6: []string{"2001:DB8::1"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"192.0.2.11", "192.0.2.12"}, got.IPv4)
		assert.Equal(t, []string{"2001:db8::1"}, got.IPv6)
		for _, z := range zones {
			assert.Equal(t, []string{"192.0.2.11", "192.0.2.12"}, f.sets(t, z)["www A"].Records)
			assert.Greater(t, f.serial(t, z), before[z])
		}
		assert.Equal(t, []string{"192.0.2.11", "192.0.2.12"}, f.sets(t, zones[0])["api A"].Records)
		assert.Equal(t, []string{"2001:db8::1"}, f.sets(t, zones[1])["www AAAA"].Records)
		require.Len(t, f.changed, 1)
		assert.ElementsMatch(t, zones, f.changed[0])

		// The same update again changes nothing.
		after := f.serial(t, zones[2])
		f.changed = nil
		_, err = f.svc.UpdateSourceHost(ctx, f.editor, src.ID, SourceInput{Name: "web-1", IPv4: []string{"192.0.2.11", "192.0.2.12"}, IPv6: []string{"2001:db8::1"}})
		require.NoError(t, err)
		assert.Equal(t, after, f.serial(t, zones[2]))
		assert.Empty(t, f.changed)

		_, err = f.svc.UpdateSourceHost(ctx, f.editor, src.ID, SourceInput{Name: "web-1", IPv4: []string{"2001:db8::1"}})
		assert.Equal(t, "400", kindOf(err))
		_, err = f.svc.UpdateSourceHost(ctx, f.editor, uuid.NewString(), SourceInput{Name: "x"})
		assert.Equal(t, "404", kindOf(err))

		// Unbind keeps the records as a manual set; delete releases the rest.
		require.NoError(t, f.svc.UnbindSourceHost(ctx, f.editor, src.ID, BindInput{ZoneID: zones[0], Name: "api", Type: "A"}))
		assert.Equal(t, "manual", f.sets(t, zones[0])["api A"].OriginKind)
		assert.Equal(t, "404", kindOf(f.svc.UnbindSourceHost(ctx, f.editor, src.ID, BindInput{ZoneID: zones[0], Name: "api", Type: "A"})))
		require.NoError(t, f.svc.DeleteSourceHost(ctx, f.editor, src.ID))
		for _, z := range zones {
			s := f.sets(t, z)["www A"]
			assert.Equal(t, "manual", s.OriginKind)
			assert.Equal(t, []string{"192.0.2.11", "192.0.2.12"}, s.Records)
		}
	})
}

func TestTemplatesAndRecordSets(t *testing.T) {
	eachDB(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		z := f.zone(t, f.project.ID, "t.example")
		_, err := f.svc.CreateRecordSet(ctx, f.editor, z.ID, rs("www", "A", "192.0.2.9"))
		require.NoError(t, err)
		tpl, err := f.svc.CreateTemplate(ctx, f.editor, f.project.ID, TemplateInput{Name: "mail", Sets: []records.RecordSet{
			rs("@", "MX", "10 mail"), rs("mail", "A", "192.0.2.25"), rs("www", "A", "192.0.2.80")}})
		require.NoError(t, err)
		_, err = f.svc.CreateTemplate(ctx, f.editor, f.project.ID, TemplateInput{Name: "mail", Sets: []records.RecordSet{}})
		assert.Equal(t, "409", kindOf(err), "template names are unique per project")
		_, err = f.svc.CreateTemplate(ctx, f.editor, f.project.ID, TemplateInput{Name: "bad", Sets: []records.RecordSet{rs("x.example.", "A", "192.0.2.1")}})
		assert.Equal(t, "400", kindOf(err))
		rep, err := f.svc.ApplyTemplate(ctx, f.editor, tpl.ID, z.ID)
		require.NoError(t, err)
		assert.Equal(t, records.Report{ZoneID: z.ID, Applied: []string{"@ MX", "mail A"}, SkippedPriority: []string{}, Conflicts: []string{"www A"}}, rep)
		assert.Equal(t, []string{"10 mail.t.example."}, f.sets(t, z.ID)["@ MX"].Records)
		s := f.serial(t, z.ID)
		rep2, err := f.svc.ApplyTemplate(ctx, f.editor, tpl.ID, z.ID)
		require.NoError(t, err)
		assert.Equal(t, rep, rep2)
		assert.Equal(t, s, f.serial(t, z.ID), "re-applying changes nothing")
		_, err = f.svc.ApplyTemplate(ctx, f.viewer, tpl.ID, z.ID)
		assert.Equal(t, "403", kindOf(err))

		// Record-set rules: duplicate key and CNAME clashes are conflicts.
		_, err = f.svc.CreateRecordSet(ctx, f.editor, z.ID, rs("www", "A", "192.0.2.1"))
		assert.Equal(t, "409", kindOf(err))
		_, err = f.svc.CreateRecordSet(ctx, f.editor, z.ID, rs("www", "CNAME", "x.example."))
		assert.Equal(t, "409", kindOf(err))
		_, err = f.svc.CreateRecordSet(ctx, f.editor, z.ID, rs("www", "A"))
		assert.Equal(t, "400", kindOf(err))
		mail := f.sets(t, z.ID)["mail A"]
		upd, err := f.svc.UpdateRecordSet(ctx, f.editor, z.ID, mail.ID, records.RecordSet{Name: "mail", Type: "A", TTL: new(int64(60)), Records: []string{"192.0.2.26"}})
		require.NoError(t, err)
		assert.Equal(t, "manual", upd.OriginKind, "an edited template set becomes manual")
		_, err = f.svc.UpdateRecordSet(ctx, f.editor, z.ID, uuid.NewString(), rs("mail", "A", "192.0.2.1"))
		assert.Equal(t, "404", kindOf(err))
		assert.Equal(t, "404", kindOf(f.svc.DeleteRecordSet(ctx, f.editor, uuid.NewString(), mail.ID)))

		// Zone rules.
		_, err = f.svc.CreateZone(ctx, f.editor, f.project.ID, ZoneInput{Name: "t.example"})
		assert.Equal(t, "409", kindOf(err))
		_, err = f.svc.UpdateZone(ctx, f.editor, z.ID, ZoneInput{Name: "other.example"})
		assert.Equal(t, "400", kindOf(err))
		zu, err := f.svc.UpdateZone(ctx, f.editor, z.ID, ZoneInput{Minimum: new(uint32(300))})
		require.NoError(t, err)
		assert.Equal(t, uint32(300), zu.Minimum)
		assert.Greater(t, zu.Serial, s)
		out, err := f.svc.ExportZone(ctx, f.viewer, z.ID)
		require.NoError(t, err)
		assert.Contains(t, string(out), "$ORIGIN t.example.\n")
		assert.Contains(t, string(out), "mail\t60\tIN\tA\t192.0.2.26\n")
	})
}

func TestUnknownIDs(t *testing.T) {
	eachDB(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		id := uuid.NewString()
		for name, fn := range map[string]func() error{
			"project":    func() error { _, err := f.svc.GetProject(ctx, f.admin, id); return err },
			"zone":       func() error { _, err := f.svc.GetZone(ctx, f.admin, id); return err },
			"template":   func() error { _, err := f.svc.GetTemplate(ctx, f.admin, id); return err },
			"sync group": func() error { _, err := f.svc.UpdateSyncGroupSets(ctx, f.admin, id, []records.RecordSet{}); return err },
			"source":     func() error { _, err := f.svc.UpdateSourceHost(ctx, f.admin, id, SourceInput{Name: "x"}); return err },
			"member":     func() error { return f.svc.RemoveMember(ctx, f.owner, f.project.ID, id) },
			"user": func() error {
				_, err := f.svc.AddMember(ctx, f.owner, f.project.ID, MemberInput{UserID: id, Role: "viewer"})
				return err
			},
			"set": func() error { return f.svc.DeleteSyncGroup(ctx, f.owner, id) },
		} {
			assert.Equal(t, "404", kindOf(fn()), name)
		}
	})
}
