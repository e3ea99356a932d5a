package health

import "fmt"

// ExitError ends a process with a specific exit code (ExitSelfRestart)
// without printing an error: the mains of lcm-worker, lcm-agentgw and
// lcm-scanner exit with it.
type ExitError int

func (e ExitError) Error() string { return fmt.Sprintf("exit code %d", int(e)) }
