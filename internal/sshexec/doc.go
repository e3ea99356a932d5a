// Package sshexec is the SSH implementation of remote.Executor on top of
// golang.org/x/crypto/ssh.
//
// Every connection pins the host key the operator confirmed at onboarding
// (Probe shows it) and refuses any other key before a single command is
// sent. Each step has its own deadline: TCP dial, SSH handshake (a deadline
// on the net.Conn, because ClientConfig.Timeout bounds only the dial),
// command, and output idleness; keepalive@openssh.com requests detect dead
// connections. Pool reuses one connection per server for many sessions.
//
// # Remote process lifetime
//
// sshd does not kill a non-PTY command when its session closes: a `sleep
// 1000` survives an aborted ssh client, and under sudo the root processes
// ignore the signals the client may send. So Run never sends Cmd as is; it
// sends a small POSIX sh wrapper (see wrap.go), run after `sudo -n` when
// Command.Sudo is set so the wrapper has the command's privileges:
//
//	client                         remote (sh wrapper, as root under sudo)
//	stdin: frames "N\n"+N bytes …  ─► feeder ─pipe─► sh -c "$Cmd"   (same process group)
//	stdin: "0\n", then kept open   ─► lifeline: cat >/dev/null (blocks)
//	abort: close stdin / session   ─► cat sees EOF ─► kill -KILL 0 (whole group)
//	done:  exit-status received    ─► wrapper gone ─► lifeline exits quietly
//
// The channel's stdin is the lifeline: it stays open while the command runs
// and closes when the client aborts, closes the session, or the connection
// dies (sshd closes the pipes in all three cases). The command's own stdin
// travels in length-prefixed frames so its EOF does not close the lifeline.
// Run additionally sends signal KILL, which sshd (OpenSSH ≥ 7.9) delivers to
// the session's process group at once for non-sudo commands.
//
// Known limits: a command that spawns children in their own process group
// or session (setsid, a PTY) leaves them running; the wrapper needs
// `sudo -n sh` to be allowed for sudo commands; the feeder uses `head -c`
// (coreutils reads exactly N bytes; other implementations may not).
package sshexec
