package topology

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ports of the topology come from below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range, 32768–60999 by default): a port picked
// with testutil.FreePort is free only until an outgoing connection of any
// process on the machine takes it as its source port, which happens under
// load between the pick and the process's bind. Below that range only
// listeners compete.
const portLow = 20000

// portHigh is the start of the ephemeral range (or 32768).
func portHigh() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > portLow+1000 {
				return n
			}
		}
	}
	return 32768
}

var (
	portMu    sync.Mutex
	portTaken = map[int]bool{}
)

// freePort returns a port in [portLow, portHigh) that is free now and was
// not handed out before in this test process.
func freePort(t testing.TB) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	for i := 0; i < 1000; i++ {
		p := portLow + rand.IntN(portHigh()-portLow)
		if portTaken[p] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		portTaken[p] = true
		return p
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}
