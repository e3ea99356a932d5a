package pkgmgr

import (
	"fmt"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// maxSamples bounds the unreadable lines quoted in a LineError.
const maxSamples = 3

// LineError reports lines a parser could not read. Parsers return it beside
// the records they did read: a refresh keeps a partial inventory rather than
// none. It matches domain.ErrInvalid.
type LineError struct {
	Parser  string
	Count   int
	Samples []string // the first few bad lines, truncated
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s: %d unreadable line(s), e.g. %q", e.Parser, e.Count, e.Samples)
}

// Unwrap makes errors.Is(err, domain.ErrInvalid) true.
func (e *LineError) Unwrap() error { return domain.ErrInvalid }

// lineErrs accumulates bad lines for one parse.
type lineErrs struct {
	parser  string
	count   int
	samples []string
}

func (l *lineErrs) add(line string) {
	l.count++
	if len(l.samples) < maxSamples {
		if len(line) > 120 {
			line = line[:120]
		}
		l.samples = append(l.samples, line)
	}
}

// err returns nil when every line was read.
func (l *lineErrs) err() error {
	if l.count == 0 {
		return nil
	}
	return &LineError{Parser: l.parser, Count: l.count, Samples: l.samples}
}

// splitTabs splits line into exactly n tab-separated fields without
// allocating a slice per line; ok is false for any other field count.
func splitTabs(line string, dst []string) bool {
	for i := range len(dst) - 1 {
		f, rest, found := strings.Cut(line, "\t")
		if !found {
			return false
		}
		dst[i], line = f, rest
	}
	if strings.IndexByte(line, '\t') >= 0 {
		return false
	}
	dst[len(dst)-1] = line
	return true
}

// eachLine calls fn for each non-blank line, without its trailing CR.
func eachLine(out []byte, fn func(line string)) {
	s := string(out)
	for len(s) > 0 {
		var line string
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			line, s = s, ""
		}
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		fn(line)
	}
}

// sectionHeader frames sections in compound listings (same convention as
// the facts collector).
const sectionHeader = "==lcm:section "

// splitSections cuts compound output into named sections.
func splitSections(out []byte) map[string][]byte {
	secs := map[string][]byte{}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur != "" {
			secs[cur] = append(secs[cur], b.String()...)
		}
		b.Reset()
	}
	eachLine(out, func(line string) {
		if strings.HasPrefix(line, sectionHeader) && strings.HasSuffix(line, "==") && len(line) > len(sectionHeader)+2 {
			flush()
			cur = line[len(sectionHeader) : len(line)-2]
			if _, ok := secs[cur]; !ok {
				secs[cur] = nil
			}
			return
		}
		b.WriteString(line)
		b.WriteByte('\n')
	})
	flush()
	return secs
}
