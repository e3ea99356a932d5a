package pkgmgr

import "strings"

// sudo is the prefix of every privileged command: -n makes sudo fail at once
// when a password would be needed, instead of hanging the job until timeout.
const sudo = "sudo -n "

// shScript wraps a multi-step script in "sh -c" so it runs the same whatever
// the management user's login shell is (bash, dash, zsh, fish, …).
func shScript(lines ...string) string {
	return "sh -c " + Quote(strings.Join(lines, "\n"))
}
