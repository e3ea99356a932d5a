package records

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func set(name, typ string, recs ...string) RecordSet {
	return RecordSet{Name: name, Type: typ, Records: recs}
}

func zs(s RecordSet, o Origin) ZoneSet { return ZoneSet{RecordSet: s, Origin: o} }

// enforceTwice plans, applies and plans again, checking idempotence.
func enforceTwice(t *testing.T, g SyncGroupRef, desired []RecordSet, st ZoneState) (Plan, Report, []ZoneSet) {
	t.Helper()
	plan, rep := PlanSync(g, desired, st)
	after := plan.Apply(st.Sets)
	st2 := st
	st2.Sets = after
	plan2, rep2 := PlanSync(g, desired, st2)
	assert.True(t, plan2.Empty(), "second run must change nothing: %+v", plan2)
	assert.Equal(t, rep, rep2, "second run must report the same")
	return plan, rep, after
}

func TestPlanSyncCases(t *testing.T) {
	g := SyncGroupRef{ID: "g", Priority: 10}
	www := set("www", "A", "192.0.2.1")
	www2 := set("www", "A", "192.0.2.2")
	tests := []struct {
		name      string
		desired   []RecordSet
		current   []ZoneSet
		prios     map[string]int
		applied   []string
		skipped   []string
		conflicts []string
		puts      int
		deletes   []SetKey
		final     []ZoneSet
	}{
		{name: "create", desired: []RecordSet{www}, applied: []string{"www A"}, puts: 1,
			final: []ZoneSet{zs(www, FromSyncGroup("g"))}},
		{name: "own equal no write", desired: []RecordSet{www}, current: []ZoneSet{zs(www, FromSyncGroup("g"))},
			applied: []string{"www A"}},
		{name: "own different overwritten", desired: []RecordSet{www2}, current: []ZoneSet{zs(www, FromSyncGroup("g"))},
			applied: []string{"www A"}, puts: 1, final: []ZoneSet{zs(www2, FromSyncGroup("g"))}},
		{name: "manual different conflict", desired: []RecordSet{www2}, current: []ZoneSet{zs(www, Manual())},
			conflicts: []string{"www A"}, final: []ZoneSet{zs(www, Manual())}},
		{name: "template different conflict", desired: []RecordSet{www2}, current: []ZoneSet{zs(www, FromTemplate("t"))},
			conflicts: []string{"www A"}},
		{name: "source different conflict", desired: []RecordSet{www2}, current: []ZoneSet{zs(www, FromSource("s"))},
			conflicts: []string{"www A"}},
		{name: "manual equal applied stays manual", desired: []RecordSet{www}, current: []ZoneSet{zs(www, Manual())},
			applied: []string{"www A"}, final: []ZoneSet{zs(www, Manual())}},
		{name: "ttl differs is different content", desired: []RecordSet{{Name: "www", Type: "A", TTL: ttl(60), Records: www.Records}},
			current: []ZoneSet{zs(www, Manual())}, conflicts: []string{"www A"}},
		{name: "higher priority group skips", desired: []RecordSet{www2}, current: []ZoneSet{zs(www, FromSyncGroup("h"))},
			prios: map[string]int{"h": 1}, skipped: []string{"www A"}, final: []ZoneSet{zs(www, FromSyncGroup("h"))}},
		{name: "equal priority lower id wins", desired: []RecordSet{www2}, current: []ZoneSet{zs(www, FromSyncGroup("a"))},
			prios: map[string]int{"a": 10}, skipped: []string{"www A"}},
		{name: "equal priority higher id taken over", desired: []RecordSet{www2}, current: []ZoneSet{zs(www, FromSyncGroup("z"))},
			prios: map[string]int{"z": 10}, applied: []string{"www A"}, puts: 1, final: []ZoneSet{zs(www2, FromSyncGroup("g"))}},
		{name: "lower priority group taken over", desired: []RecordSet{www}, current: []ZoneSet{zs(www, FromSyncGroup("l"))},
			prios: map[string]int{"l": 50}, applied: []string{"www A"}, puts: 1, final: []ZoneSet{zs(www, FromSyncGroup("g"))}},
		{name: "deleted group taken over", desired: []RecordSet{www2}, current: []ZoneSet{zs(www, FromSyncGroup("gone"))},
			applied: []string{"www A"}, puts: 1},
		{name: "cname vs manual A", desired: []RecordSet{set("www", "CNAME", "lb.example.net.")},
			current: []ZoneSet{zs(www, Manual())}, conflicts: []string{"www CNAME"}},
		{name: "A vs manual cname", desired: []RecordSet{www, set("www", "AAAA", "2001:db8::1")},
			current: []ZoneSet{zs(set("www", "CNAME", "lb.example.net."), Manual())}, conflicts: []string{"www A", "www AAAA"}},
		{name: "A vs higher group cname is a conflict", desired: []RecordSet{www},
			current: []ZoneSet{zs(set("www", "CNAME", "lb.example.net."), FromSyncGroup("h"))}, prios: map[string]int{"h": 0},
			conflicts: []string{"www A"}},
		{name: "own cname replaced by A", desired: []RecordSet{www},
			current: []ZoneSet{zs(set("www", "CNAME", "lb.example.net."), FromSyncGroup("g"))},
			applied: []string{"www A"}, puts: 1, deletes: []SetKey{"www CNAME"}, final: []ZoneSet{zs(www, FromSyncGroup("g"))}},
		{name: "no longer desired deleted only where owned", desired: nil,
			current: []ZoneSet{zs(www, FromSyncGroup("g")), zs(set("mail", "A", "192.0.2.5"), Manual()),
				zs(set("x", "A", "192.0.2.6"), FromSyncGroup("h"))},
			prios: map[string]int{"h": 20}, deletes: []SetKey{"www A"},
			final: []ZoneSet{zs(set("mail", "A", "192.0.2.5"), Manual()), zs(set("x", "A", "192.0.2.6"), FromSyncGroup("h"))}},
		{name: "other types at name coexist", desired: []RecordSet{www}, current: []ZoneSet{zs(set("www", "TXT", `"x"`), Manual())},
			applied: []string{"www A"}, puts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := ZoneState{ZoneID: "z1", Sets: tt.current, GroupPriority: tt.prios}
			plan, rep, after := enforceTwice(t, g, tt.desired, st)
			orEmpty := func(s []string) []string {
				if s == nil {
					return []string{}
				}
				return s
			}
			assert.Equal(t, Report{ZoneID: "z1", Applied: orEmpty(tt.applied), SkippedPriority: orEmpty(tt.skipped),
				Conflicts: orEmpty(tt.conflicts)}, rep)
			assert.Len(t, plan.Put, tt.puts)
			assert.Equal(t, tt.deletes, plan.Delete)
			if tt.final != nil {
				assert.Equal(t, tt.final, after)
			}
		})
	}
}

func TestPlanSyncReportNeverNil(t *testing.T) {
	_, rep := PlanSync(SyncGroupRef{ID: "g"}, nil, ZoneState{ZoneID: "z"})
	require.NotNil(t, rep.Applied)
	require.NotNil(t, rep.SkippedPriority)
	require.NotNil(t, rep.Conflicts)
}

func TestPlanSyncTwoGroupsConverge(t *testing.T) {
	hi, lo := SyncGroupRef{ID: "hi", Priority: 1}, SyncGroupRef{ID: "lo", Priority: 5}
	prios := map[string]int{"hi": 1, "lo": 5}
	hiSets := []RecordSet{set("www", "A", "192.0.2.1")}
	loSets := []RecordSet{set("www", "A", "192.0.2.2"), set("api", "A", "192.0.2.3")}
	run := func(order []SyncGroupRef) []ZoneSet {
		st := ZoneState{ZoneID: "z", GroupPriority: prios}
		for _, g := range order {
			d := hiSets
			if g == lo {
				d = loSets
			}
			p, _ := PlanSync(g, d, st)
			st.Sets = p.Apply(st.Sets)
		}
		return st.Sets
	}
	a, b := run([]SyncGroupRef{hi, lo}), run([]SyncGroupRef{lo, hi})
	assert.Equal(t, a, b, "enforcement order must not matter")
	assert.Equal(t, FromSyncGroup("hi"), a[len(a)-1].Origin)
}

func BenchmarkPlanSync1000x20(b *testing.B) {
	desired := make([]RecordSet, 20)
	for i := range desired {
		desired[i] = set(fmt.Sprintf("h%02d", i), "A", "192.0.2.1", "192.0.2.2")
	}
	desired, err := NormalizeTemplateSets(desired)
	require.NoError(b, err)
	zones := make([]ZoneState, 1000)
	for i := range zones {
		sets := make([]ZoneSet, 0, 25)
		for j := range 20 {
			sets = append(sets, zs(set(fmt.Sprintf("h%02d", j), "A", "192.0.2.1"), FromSyncGroup("g")))
		}
		for j := range 5 {
			sets = append(sets, zs(set(fmt.Sprintf("m%d", j), "A", "192.0.2.9"), Manual()))
		}
		zones[i] = ZoneState{ZoneID: fmt.Sprint(i), Sets: sets}
	}
	g := SyncGroupRef{ID: "g", Priority: 1}
	b.ResetTimer()
	for b.Loop() {
		for _, z := range zones {
			PlanSync(g, desired, z)
		}
	}
}
