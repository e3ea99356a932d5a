package sshexec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// wrapperScript runs as `sh -c wrapperScript lcm-run MODE CMD`; see the
// package doc for the protocol. MODE 1: stdin arrives framed; MODE 0: the
// command reads /dev/null. $p is the wrapper; the lifeline kills the process
// group only while the wrapper still runs, so a finished command's
// intentional background children survive the normal session close. The
// lifeline is started in the background from inside the feeder, so that
// neither the shell's wait for the pipeline nor the exit status include it,
// and as its own `sh -c` so it holds no saved copy of the stdout pipe (dash
// keeps close-on-exec duplicates while redirecting; they would keep sshd
// from seeing EOF).
const wrapperScript = `LC_ALL=C; export LC_ALL; exec 3<&0
l='cat >/dev/null; kill -0 "$1" 2>/dev/null && kill -KILL 0'
if [ "$1" = 1 ]; then
{ while IFS= read -r n && [ "$n" -gt 0 ]; do head -c "$n" || break; done; exec >/dev/null; sh -c "$l" lifeline $$ <&3 2>&1 3<&- & } <&3 2>/dev/null | sh -c "$2" 3<&-
else
sh -c "$l" lifeline $$ <&3 >/dev/null 2>&1 3<&- &
sh -c "$2" </dev/null 3<&-
fi`

const (
	wrapperArg0 = "lcm-run"
	sudoPrefix  = "sudo -n "
)

// wrapCommand returns the command line Run sends for cmd.
func wrapCommand(cmd string, sudo, framedStdin bool) string {
	mode := "0"
	if framedStdin {
		mode = "1"
	}
	line := "sh -c " + shellQuote(wrapperScript) + " " + wrapperArg0 + " " + mode + " " + shellQuote(cmd)
	if sudo {
		return sudoPrefix + line
	}
	return line
}

// Wrapped is a command line as Client.Run sends it, decoded. Simulators and
// test servers use ParseWrapped to see the command LCM meant.
type Wrapped struct {
	Cmd         string
	Sudo        bool
	FramedStdin bool // stdin carries frames; decode with NewFrameReader
}

// ParseWrapped decodes a command line produced by Client.Run; ok is false
// for any other line (for example a raw command from another SSH client).
func ParseWrapped(line string) (w Wrapped, ok bool) {
	if rest, found := strings.CutPrefix(line, sudoPrefix); found {
		w.Sudo, line = true, rest
	}
	rest, found := strings.CutPrefix(line, "sh -c "+shellQuote(wrapperScript)+" "+wrapperArg0+" ")
	if !found || len(rest) < 2 || rest[1] != ' ' {
		return Wrapped{}, false
	}
	switch rest[0] {
	case '0':
	case '1':
		w.FramedStdin = true
	default:
		return Wrapped{}, false
	}
	cmd, err := shellUnquote(rest[2:])
	if err != nil {
		return Wrapped{}, false
	}
	w.Cmd = cmd
	return w, true
}

// shellQuote quotes s as one POSIX shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellUnquote reverses shellQuote for a whole string.
func shellUnquote(s string) (string, error) {
	var b strings.Builder
	for len(s) > 0 {
		switch {
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", errors.New("unterminated quote")
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		default:
			return "", fmt.Errorf("unexpected %q", s[0])
		}
	}
	return b.String(), nil
}

// frameChunk is the largest stdin frame: big enough that the per-frame
// `head` process is negligible, small enough to stream.
const frameChunk = 32 << 10

// writeFrames copies r to w as "N\n"+N bytes frames and ends with "0\n".
// It never closes w: the open channel stdin is the command's lifeline.
func writeFrames(w io.Writer, r io.Reader) error {
	buf := make([]byte, frameChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := io.WriteString(w, strconv.Itoa(n)+"\n"); werr != nil {
				return werr
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			_, werr := io.WriteString(w, "0\n")
			return werr
		}
		if err != nil {
			return err
		}
	}
}

// NewFrameReader decodes framed stdin (Wrapped.FramedStdin): it returns the
// command's stdin and io.EOF at the terminating empty frame, leaving the
// rest of r (the lifeline) unread.
func NewFrameReader(r io.Reader) io.Reader {
	return &frameReader{r: bufio.NewReader(r)}
}

type frameReader struct {
	r    *bufio.Reader
	left int
	done bool
}

func (f *frameReader) Read(p []byte) (int, error) {
	for f.left == 0 {
		if f.done {
			return 0, io.EOF
		}
		line, err := f.r.ReadString('\n')
		if err != nil {
			f.done = true
			return 0, io.EOF
		}
		n, err := strconv.Atoi(strings.TrimSuffix(line, "\n"))
		if err != nil || n < 0 {
			f.done = true
			return 0, fmt.Errorf("sshexec: bad stdin frame %q", line)
		}
		if n == 0 {
			f.done = true
			return 0, io.EOF
		}
		f.left = n
	}
	if len(p) > f.left {
		p = p[:f.left]
	}
	n, err := f.r.Read(p)
	f.left -= n
	if err != nil && n == 0 {
		f.done = true
		return 0, io.EOF
	}
	return n, nil
}
