package fleetsim

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/remote/sections"
	"github.com/lcmproject/lcm/internal/sshexec"
)

// serveSession answers one session channel: env and pty requests are
// accepted, the first exec (or shell) runs a responder; a signal request,
// the channel's close, or — for LCM's wrapped commands — EOF on the
// lifeline after stdin aborts it.
func (i *Instance) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request, user string) {
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
				go func() { exit <- i.exec(ctx, cancel, ch, line, user) }()
			default:
				_ = req.Reply(false, nil)
			}
		}
	}
}

// exec decodes the command line and runs it (see run).
func (i *Instance) exec(ctx context.Context, cancel context.CancelFunc, ch ssh.Channel, line, user string) int {
	f := i.fleet
	req := &Request{
		Instance: i, Config: &f.cfg, User: user, Stdout: ch, Stderr: ch.Stderr(),
		Rand: rand.New(rand.NewPCG(uint64(f.cfg.Seed), uint64(i.execs.Load())<<20|uint64(i.Index))),
	}
	cmd := line
	if w, ok := sshexec.ParseWrapped(line); ok {
		cmd, req.Sudo = w.Cmd, w.Sudo
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
		req.Stdin = ch
	}
	i.onExec(cmd, req.Sudo)
	return i.run(ctx, req, cmd, req.Sudo)
}

// run answers one command line the way sh would for the shapes LCM and
// Ansible send: the line is normalised (sudo and its options, env and
// variable assignments, one `sh -c '…' arg0 args…` level); a responder
// registered for the whole line (a recognised script) answers it; else a
// list of simple commands joined by &&, || and ; runs one by one with
// sh's short-circuit rules; else the responder for the command's name.
func (i *Instance) run(ctx context.Context, base *Request, line string, sudo bool) int {
	if token, lines, ok := sections.Parse(line); ok {
		return i.runSections(ctx, base, token, lines, sudo)
	}
	// A brace group `{ list; }` runs its list in this shell.
	if t := strings.TrimSpace(line); strings.HasPrefix(t, "{ ") && strings.HasSuffix(t, "}") {
		inner := strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(t[2:], "}")), ";")
		return i.run(ctx, base, inner, sudo)
	}
	cmd, esudo, argv := normalize(line, sudo)
	req := *base
	req.Cmd, req.Sudo, req.Argv, req.Args = cmd, esudo, argv, strings.Fields(cmd)
	t := i.fleet.table
	script, isScript := t.lookupScript(cmd)
	if !isScript {
		// A list runs part by part, each with its own sudo; a list inside
		// `sh -c '…'` after the wrapper was stripped.
		list, lsudo := line, sudo
		if parts := splitList(strings.TrimSpace(line)); len(parts) <= 1 && cmd != strings.TrimSpace(line) {
			list, lsudo = cmd, esudo
		}
		if parts := splitList(list); len(parts) > 1 {
			if lsudo && !i.maySudo(req.User) {
				_, _ = io.WriteString(req.Stderr, "sudo: a password is required\n")
				return 1
			}
			return i.runList(ctx, base, parts, lsudo)
		}
	}
	if esudo && !i.maySudo(req.User) {
		_, _ = io.WriteString(req.Stderr, "sudo: a password is required\n")
		return 1
	}
	if isScript {
		return script(ctx, &req)
	}
	return t.Lookup(cmd)(ctx, &req)
}

// onExec reports an arriving command line to Config.OnExec; a sectioned
// script is reported section by section, as it runs (runSections), so
// tests see the commands LCM meant.
func (i *Instance) onExec(line string, sudo bool) {
	if i.fleet.cfg.OnExec == nil {
		return
	}
	if _, _, ok := sections.Parse(line); ok {
		return
	}
	c, _, _ := normalize(line, sudo)
	i.fleet.cfg.OnExec(i, c)
}

// runSections answers LCM's sectioned script (internal/remote/sections)
// the way sh runs it: per section the begin marker, the section's command
// as its own command line (stderr into stdout where it merges them), the
// end marker with the exit code; after a failed gate the dependent
// sections are skipped.
func (i *Instance) runSections(ctx context.Context, base *Request, token string, lines []sections.Line, sudo bool) int {
	stopped := false
	for _, l := range lines {
		if stopped && strings.Contains(l.Flags, sections.Depends) {
			continue
		}
		if ctx.Err() != nil {
			return 137
		}
		_, _ = io.WriteString(base.Stdout, sections.BeginMarker(token, l.Name))
		req := *base
		if strings.Contains(l.Flags, sections.Merge) {
			req.Stderr = req.Stdout
		}
		i.onExec(l.Cmd, sudo)
		code := i.run(ctx, &req, l.Cmd, sudo)
		_, _ = io.WriteString(base.Stdout, sections.EndMarker(token, l.Name, code))
		if code != 0 && strings.Contains(l.Flags, sections.Gate) {
			stopped = true
		}
	}
	return 0
}

// runList runs a list's parts with sh's short-circuit rules.
func (i *Instance) runList(ctx context.Context, base *Request, parts []listPart, sudo bool) int {
	code := 0
	for j, p := range parts {
		if j > 0 {
			switch parts[j-1].op {
			case "&&":
				if code != 0 {
					continue
				}
			case "||":
				if code == 0 {
					continue
				}
			}
		}
		if ctx.Err() != nil {
			return 137
		}
		code = i.run(ctx, base, p.text, sudo)
	}
	return code
}

// normalize strips what does not change the answer: sudo with its options
// (-n, -S, -p PROMPT, -u USER…), env and NAME=value assignments, and one
// level of `sh -c '…' [arg0 args…]` (LCM's scripts, Ansible's raw and
// shell forms); argv is the script's positional arguments ($0, $1, …).
func normalize(cmd string, sudo bool) (string, bool, []string) {
	var argv []string
	for {
		cmd = strings.TrimSpace(cmd)
		first, rest := cutWord(cmd)
		switch {
		case first == "sudo":
			sudo = true
			for {
				w, r := cutWord(rest)
				if !strings.HasPrefix(w, "-") {
					break
				}
				rest = r
				switch w {
				case "-p", "-u", "-g", "-C", "-h", "-D", "-U", "-r", "-t":
					_, rest = cutWord(rest)
				}
				if w == "--" {
					break
				}
			}
			cmd = rest
		case first == "env" || first == "exec" || first == "command":
			cmd = rest
		case isAssignment(first) && rest != "":
			cmd = rest
		case (first == "/bin/sh" || first == "sh" || first == "/bin/bash" || first == "bash") && strings.HasPrefix(strings.TrimSpace(rest), "-c "):
			words := splitWords(strings.TrimSpace(rest)[3:])
			if len(words) == 0 {
				return cmd, sudo, argv
			}
			cmd, argv = words[0], words[1:]
		default:
			return cmd, sudo, argv
		}
	}
}

// isAssignment reports whether w is a shell variable assignment NAME=value.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for j, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || j > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// cutWord returns the first shell word of s (quotes removed) and the rest
// of s after it, unparsed.
func cutWord(s string) (string, string) {
	s = strings.TrimLeft(s, " \t")
	var b strings.Builder
	quote := byte(0)
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
			} else {
				b.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ' ' || c == '\t' || c == '\n':
			return b.String(), s[j+1:]
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), ""
}

// listPart is one simple command of a list and the operator after it.
type listPart struct{ text, op string }

// splitList splits a shell list at top-level &&, || and ; (outside quotes,
// parentheses, $(…) and braces). It returns nil for scripts with compound
// commands (if, for, while, case, functions), which it does not interpret.
func splitList(s string) []listPart {
	for _, w := range strings.Fields(s) {
		switch w {
		case "if", "for", "while", "until", "case", "()":
			return nil
		}
	}
	var parts []listPart
	depth, quote, last := 0, byte(0), 0
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case quote == '"':
			if c == '\\' {
				j++
			} else if c == '"' {
				quote = 0
			}
		case c == '\\':
			j++
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '{' && j+1 < len(s) && s[j+1] == ' ' && (j == 0 || s[j-1] == ' '):
			depth++ // a brace group `{ list; }` is one part of the list
		case c == '}' && j > 0 && (s[j-1] == ' ' || s[j-1] == ';') && depth > 0:
			depth--
		case depth > 0:
		case c == ';' || c == '\n':
			parts = append(parts, listPart{strings.TrimSpace(s[last:j]), ";"})
			last = j + 1
		case (c == '&' || c == '|') && j+1 < len(s) && s[j+1] == c:
			parts = append(parts, listPart{strings.TrimSpace(s[last:j]), string([]byte{c, c})})
			j++
			last = j + 1
		}
	}
	parts = append(parts, listPart{strings.TrimSpace(s[last:]), ""})
	out := parts[:0]
	for _, p := range parts {
		if p.text != "" {
			out = append(out, p)
		} else if len(out) > 0 && p.op != "" {
			out[len(out)-1].op = p.op
		}
	}
	return out
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
