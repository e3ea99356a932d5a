// Command lcm-helper is LCM's validating helper: the one program besides
// the package, container and firewall tools that the management user may
// run as root in restricted sudo mode. See internal/helper and
// docs/security.md.
package main

import (
	"os"

	"github.com/lcmproject/lcm/internal/helper"
)

func main() {
	os.Exit(helper.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
