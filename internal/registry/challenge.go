package registry

import (
	"strings"
)

// Challenge is one authentication challenge of a WWW-Authenticate header
// (RFC 7235): a scheme ("bearer", "basic", lowercased) and its parameters
// (names lowercased, values unquoted).
type Challenge struct {
	Scheme string
	Params map[string]string
}

// maxChallengeLen bounds the header text parsed (real ones are < 300 bytes).
const maxChallengeLen = 4096

// ParseChallenges parses the values of WWW-Authenticate headers into their
// challenges, e.g. `Bearer realm="https://auth.docker.io/token",
// service="registry.docker.io",scope="repository:library/nginx:pull"`.
// Malformed parts are skipped, never guessed at.
func ParseChallenges(headers []string) []Challenge {
	var out []Challenge
	for _, h := range headers {
		if len(h) > maxChallengeLen {
			h = h[:maxChallengeLen]
		}
		out = append(out, parseChallengeHeader(h)...)
	}
	return out
}

func parseChallengeHeader(s string) []Challenge {
	var out []Challenge
	p := &lexer{s: s}
	var cur *Challenge
	for {
		p.skipSpaceAndCommas()
		if p.done() {
			break
		}
		tok := p.token()
		if tok == "" {
			// Not a token where one must be: skip a character and go on.
			p.i++
			continue
		}
		p.skipSpace()
		if p.peek() == '=' && cur != nil {
			// tok is a parameter name of the current challenge (an "=="
			// after a token is token68 padding, handled below).
			save := p.i
			p.i++
			p.skipSpace()
			if p.peek() == '=' {
				p.i = save
				p.skipToken68Padding()
				continue
			}
			var v string
			if p.peek() == '"' {
				var ok bool
				if v, ok = p.quoted(); !ok {
					break
				}
			} else {
				v = p.token()
			}
			name := strings.ToLower(tok)
			if _, dup := cur.Params[name]; !dup {
				cur.Params[name] = v
			}
			continue
		}
		// A new challenge starts with its scheme.
		out = append(out, Challenge{Scheme: strings.ToLower(tok), Params: map[string]string{}})
		cur = &out[len(out)-1]
		// token68 form ("Negotiate abc==") carries no parameters we use.
		if p.peek() != ',' && !p.done() {
			save := p.i
			t := p.token()
			p.skipToken68Padding()
			p.skipSpace()
			if t != "" && (p.done() || p.peek() == ',') {
				continue
			}
			p.i = save
		}
	}
	return out
}

type lexer struct {
	s string
	i int
}

func (p *lexer) done() bool { return p.i >= len(p.s) }

func (p *lexer) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *lexer) skipSpace() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *lexer) skipSpaceAndCommas() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

func (p *lexer) skipToken68Padding() {
	for !p.done() && p.s[p.i] == '=' {
		p.i++
	}
}

// isTokenChar is RFC 7230's tchar (plus "/" for token68 values).
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~/:", c) >= 0
}

func (p *lexer) token() string {
	start := p.i
	for !p.done() && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a quoted-string with backslash escapes; false when it is
// not closed.
func (p *lexer) quoted() (string, bool) {
	p.i++ // opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), true
		case '\\':
			if p.done() {
				return "", false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}
