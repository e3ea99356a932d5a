package fleet

import (
	"fmt"
	"testing"
)

// TestPickGateway: a server's agent goes to a gateway serving its segment,
// always the same one for the same server, and a fleet spreads over equal
// gateways.
func TestPickGateway(t *testing.T) {
	gws := []AgentGateway{{Name: "a"}, {Name: "b"}, {Name: "dmz", Segments: []string{"dmz"}}}
	count := map[string]int{}
	for i := range 3000 {
		id := fmt.Sprintf("server-%d", i)
		g, ok := pickGateway(gws, id, "default")
		if !ok || g.Name == "dmz" {
			t.Fatalf("%s in segment default got %+v %v", id, g, ok)
		}
		if again, _ := pickGateway(gws, id, "default"); again.Name != g.Name {
			t.Fatalf("%s: %s then %s", id, g.Name, again.Name)
		}
		count[g.Name]++
	}
	if count["a"] < 1300 || count["b"] < 1300 {
		t.Fatalf("uneven spread %v", count)
	}
	for i := range 50 {
		g, _ := pickGateway(gws, fmt.Sprintf("s-%d", i), "dmz")
		count["dmz:"+g.Name]++
	}
	if count["dmz:dmz"] == 0 {
		t.Fatalf("the dmz gateway never chosen for dmz servers: %v", count)
	}
	if _, ok := pickGateway([]AgentGateway{{Name: "dmz", Segments: []string{"dmz"}}}, "x", "default"); ok {
		t.Fatal("a gateway of another segment was chosen")
	}
}
