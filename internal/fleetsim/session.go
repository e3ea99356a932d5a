package fleetsim

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/sshexec"
)

// serveSession answers one session channel: env and pty requests are
// accepted, the first exec (or shell) runs a responder; a signal request,
// the channel's close, or — for LCM's wrapped commands — EOF on the
// lifeline after stdin aborts it.
func (i *Instance) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	ctx, cancel := context.WithCancel(i.fleet.ctx)
	defer cancel()
	started := false
	exit := make(chan int, 1)
	for {
		select {
		case code := <-exit:
			status := make([]byte, 4)
			binary.BigEndian.PutUint32(status, uint32(code))
			_, _ = ch.SendRequest("exit-status", false, status)
			return
		case req, ok := <-reqs:
			if !ok {
				return // channel closed by the client: cancel
			}
			switch req.Type {
			case "env", "pty-req", "window-change":
				_ = req.Reply(true, nil)
			case "signal":
				cancel()
			case "exec", "shell":
				if started {
					_ = req.Reply(false, nil)
					continue
				}
				started = true
				var line string
				if req.Type == "exec" && len(req.Payload) >= 4 {
					n := binary.BigEndian.Uint32(req.Payload)
					if int(n) <= len(req.Payload)-4 {
						line = string(req.Payload[4 : 4+n])
					}
				}
				_ = req.Reply(true, nil)
				i.execs.Add(1)
				go func() { exit <- i.exec(ctx, cancel, ch, line) }()
			default:
				_ = req.Reply(false, nil)
			}
		}
	}
}

// exec decodes the command line and runs the matching responder.
func (i *Instance) exec(ctx context.Context, cancel context.CancelFunc, ch ssh.Channel, line string) int {
	f := i.fleet
	req := &Request{
		Instance: i, Config: &f.cfg, Stdout: ch, Stderr: ch.Stderr(),
		Rand: rand.New(rand.NewPCG(uint64(f.cfg.Seed), uint64(i.execs.Load())<<20|uint64(i.Index))),
	}
	if w, ok := sshexec.ParseWrapped(line); ok {
		req.Cmd, req.Sudo = w.Cmd, w.Sudo
		// The channel's stdin is LCM's lifeline: its EOF after the command's
		// stdin means abort.
		if w.FramedStdin {
			pr, pw := io.Pipe()
			req.Stdin = pr
			go func() {
				fr := sshexec.NewFrameReader(ch)
				_, err := io.Copy(pw, fr)
				pw.CloseWithError(err)
				_, _ = io.Copy(io.Discard, ch)
				cancel()
			}()
		} else {
			req.Stdin = strings.NewReader("")
			go func() { _, _ = io.Copy(io.Discard, ch); cancel() }()
		}
	} else {
		req.Cmd, req.Stdin = line, ch
	}
	req.Cmd, req.Sudo = normalize(req.Cmd, req.Sudo)
	req.Args = strings.Fields(req.Cmd)
	if f.cfg.OnExec != nil {
		f.cfg.OnExec(i, req.Cmd)
	}
	return f.table.Lookup(req.Cmd)(ctx, req)
}

// normalize strips what does not change the answer: `sudo -n`, LC_ALL=C,
// and one level of `sh -c '…'` (Ansible's raw and shell forms).
func normalize(cmd string, sudo bool) (string, bool) {
	for {
		cmd = strings.TrimSpace(cmd)
		switch {
		case strings.HasPrefix(cmd, "sudo -n "):
			cmd, sudo = cmd[len("sudo -n "):], true
		case strings.HasPrefix(cmd, "sudo "):
			cmd, sudo = cmd[len("sudo "):], true
		case strings.HasPrefix(cmd, "LC_ALL=C "):
			cmd = cmd[len("LC_ALL=C "):]
		case strings.HasPrefix(cmd, "/bin/sh -c ") || strings.HasPrefix(cmd, "sh -c "):
			rest := cmd[strings.Index(cmd, "-c ")+3:]
			words := splitWords(rest)
			if len(words) == 0 {
				return cmd, sudo
			}
			cmd = words[0]
		default:
			return cmd, sudo
		}
	}
}

// splitWords splits a shell line into words, honouring single quotes,
// double quotes and backslashes; enough for commands the simulator sees.
func splitWords(s string) []string {
	var words []string
	var b strings.Builder
	inWord, quote := false, byte(0)
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' && j+1 < len(s) {
				j++
				b.WriteByte(s[j])
			} else {
				b.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && j+1 < len(s):
			j++
			b.WriteByte(s[j])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	return words
}
