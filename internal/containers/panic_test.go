package containers

import (
	"os"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestInspectParserPanicIsRecovered: the inspect sections are parsed in a
// goroutine of their own (output of the managed host: hostile input), so
// the job's own recovery would not see a panic there. It is recovered and
// counted, and the collection fails with a plain error instead of the
// process ending.
func TestInspectParserPanicIsRecovered(t *testing.T) {
	b, err := os.ReadFile("testdata/collect-docker-28.2.2-and-podman-4.3.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseCollect(b); err != nil {
		t.Fatalf("the recorded collection: %v", err)
	}
	panics := testutil.CountPanics(t)
	parseInspect = func([]byte) ([]Inspected, error) { panic("the parser met output it did not expect") }
	t.Cleanup(func() { parseInspect = ParseInspect })
	_, err = ParseCollect(b)
	if err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("collection with a panicking parser: %v", err)
	}
	if got := panics(); got < 1 {
		t.Fatalf("%d panics counted", got)
	}
}
