// Package remote is the transport-agnostic interface every remote action in
// LCM runs through: run one command with stdin, stream stdout and stderr,
// get the exit code, cancel. The SSH implementation lives in sshexec; the
// agent implementation will speak the same interface through the agent
// gateway. The package imports only the standard library.
//
// A remote run ends in exactly one of three ways:
//
//	Run ──► (Result{ExitCode}, nil)   the command ran and exited (any code)
//	    ──► (Result{}, err)           it did not run or did not finish; err
//	                                  unwraps to one category below
//
// A non-zero exit code is not an error: callers decide what it means.
package remote

import (
	"context"
	"io"
	"time"
)

// Command is one command to run on a remote host.
type Command struct {
	// Cmd is a POSIX shell command line. The transport runs it with
	// LC_ALL=C so parsers see stable output.
	Cmd string
	// Stdin, when non-nil, is streamed to the command, followed by EOF.
	// When nil the command reads /dev/null.
	Stdin io.Reader
	// Stdout and Stderr receive output as it arrives (for live console
	// output). Nil discards. Each writer is called from one goroutine at a
	// time, but stdout and stderr are written concurrently.
	Stdout, Stderr io.Writer
	// Sudo runs the command as root through `sudo -n` (never prompts).
	Sudo bool
	// Timeout bounds the whole run; zero means only ctx bounds it.
	Timeout time.Duration
	// IdleTimeout aborts the run when neither stdout nor stderr produced a
	// byte for this long; zero disables it.
	IdleTimeout time.Duration
}

// Result is the outcome of a command that ran to completion.
type Result struct {
	// ExitCode is the remote exit status; a command killed by a signal
	// reports 128+signal number, as shells do.
	ExitCode int
	// Duration is the wall time from Run's call to its return.
	Duration time.Duration
}

// Executor runs commands on one remote host. Implementations are safe for
// concurrent use; concurrent Runs may share one connection.
//
// When ctx is cancelled, Command.Timeout passes or Command.IdleTimeout
// trips, Run must close the session and kill the remote command with its
// whole process group (also under sudo) before it returns.
type Executor interface {
	Run(ctx context.Context, c Command) (Result, error)
	Close() error
}
