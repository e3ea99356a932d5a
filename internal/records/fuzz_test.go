package records

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"
)

func FuzzNormalizeSet(f *testing.F) {
	for _, s := range []struct{ name, typ, value string }{
		{"www", "A", "192.0.2.1"}, {"@", "MX", "10 mail"}, {"x", "TXT", `"a; b" "c"`},
		{"_s._tcp", "SRV", "1 2 3 t"}, {"@", "CAA", `0 issue "ca.example"`}, {"v6", "AAAA", "2001:db8::1"},
		{"a", "CNAME", "@"}, {"x", "TXT", "free text \\ \" ;"}, {"x", "MX", "10 \\@"}, {"x", "PTR", "a\\.b."},
	} {
		f.Add(s.name, s.typ, s.value, int64(300))
	}
	f.Fuzz(func(t *testing.T, name, typ, value string, ttl int64) {
		in := RecordSet{Name: name, Type: typ, TTL: &ttl, Records: []string{value}}
		out, err := NormalizeSet("example.com.", in)
		if err == nil {
			for _, v := range out.Records {
				owner := "example.com."
				if out.Name != "@" {
					owner = out.Name + ".example.com."
				}
				rr, perr := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", owner, *out.TTL, out.Type, v))
				if perr != nil || rr == nil {
					t.Fatalf("accepted %q but dns.NewRR rejects %q: %v", value, v, perr)
				}
			}
			again, err := NormalizeSet("example.com.", out)
			if err != nil || !again.Equal(out) {
				t.Fatalf("canonical form not stable: %+v -> %+v, %v", out, again, err)
			}
		}
		tout, err := NormalizeTemplateSet(in)
		if err == nil {
			again, err := NormalizeTemplateSet(tout)
			if err != nil || !again.Equal(tout) {
				t.Fatalf("template form not stable: %+v -> %+v, %v", tout, again, err)
			}
			if _, err := NormalizeSet("example.org.", tout); err != nil {
				t.Fatalf("template set %+v not valid in a zone: %v", tout, err)
			}
		}
	})
}

// FuzzPlanSync builds zones from fuzz bytes and checks the planner's
// invariants: every desired key lands in exactly one report list, only the
// group's own sets are deleted or replaced, and a second run is a no-op.
func FuzzPlanSync(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 3)
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, 0)
	f.Fuzz(func(t *testing.T, data []byte, prio int) {
		names := []string{"@", "www", "api", "x.y"}
		types := []string{"A", "CNAME", "TXT"}
		values := map[string][]string{"A": {"192.0.2.1", "192.0.2.2"}, "CNAME": {"a.example.net.", "b.example.net."}, "TXT": {`"a"`, `"b"`}}
		origins := []Origin{Manual(), FromTemplate("t"), FromSource("s"), FromSyncGroup("g"), FromSyncGroup("h"), FromSyncGroup("l")}
		g := SyncGroupRef{ID: "g", Priority: prio % 20}
		st := ZoneState{ZoneID: "z", GroupPriority: map[string]int{"h": 5, "l": 15}}
		var desired []RecordSet
		seenZ, seenD := map[SetKey]bool{}, map[SetKey]bool{}
		for i := 0; i+2 < len(data); i += 3 {
			n, ty := names[int(data[i])%len(names)], types[int(data[i+1])%len(types)]
			if n == "@" && ty == "CNAME" {
				continue
			}
			s := set(n, ty, values[ty][int(data[i+2])%2])
			if data[i+2]&0x80 != 0 {
				if !seenD[s.Key()] {
					desired = append(desired, s)
					seenD[s.Key()] = true
				}
			} else if !seenZ[s.Key()] {
				st.Sets = append(st.Sets, zs(s, origins[int(data[i+2]>>1)%len(origins)]))
				seenZ[s.Key()] = true
			}
		}
		if checkCoexistence(desired) != nil {
			return // the service rejects such a group before planning
		}
		plan, rep := PlanSync(g, desired, st)
		if n := len(rep.Applied) + len(rep.SkippedPriority) + len(rep.Conflicts); n != len(desired) {
			t.Fatalf("report covers %d of %d desired sets: %+v", n, len(desired), rep)
		}
		cur := map[SetKey]ZoneSet{}
		for _, s := range st.Sets {
			cur[s.Key()] = s
		}
		for _, k := range plan.Delete {
			if cur[k].Origin != FromSyncGroup("g") {
				t.Fatalf("deleted %s owned by %s", k, cur[k].Origin)
			}
		}
		for _, p := range plan.Put {
			if c, ok := cur[p.Key()]; ok && c.Origin.Kind != OriginSyncGroup {
				t.Fatalf("overwrote %s owned by %s", p.Key(), c.Origin)
			}
		}
		st.Sets = plan.Apply(st.Sets)
		plan2, rep2 := PlanSync(g, desired, st)
		if !plan2.Empty() || fmt.Sprint(rep) != fmt.Sprint(rep2) {
			t.Fatalf("not idempotent: %+v %+v vs %+v", plan2, rep, rep2)
		}
	})
}
