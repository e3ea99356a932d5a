package speech

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lcmproject/lcm/internal/domain"
)

// Memory design of the speech-to-text upload path
//
// A 25 MiB JSON body holds up to 25 MiB of base64 text that decodes to at
// most 18.75 MiB. Decoding it with encoding/json would hold the body (25
// MiB), the Go string (25 MiB) and the decoded bytes (19 MiB) at once, plus
// the growth of json's buffers. DecodeSTTRequest instead reads the body once
// through a 64 KiB bufio.Reader, recognises the two fields with a small
// hand-written scanner and streams the characters of "audio" through JSON
// unescaping and base64 decoding straight into the output slice. Peak heap is
// the decoded audio plus its last append growth (< 2 × 19 MiB), about 40 MiB
// for the largest body; the test TestDecodeSTTRequestMemory measures it.
//
// Base64 is accepted in the standard and the URL-safe alphabet, with or
// without padding, with embedded line breaks, and with a "data:…;base64,"
// prefix (what FileReader.readAsDataURL produces).

// DecodeSTTRequest reads a POST /v1/speech/stt body {"audio": base64,
// "mime_type": string} from r without buffering the base64 text. maxAudio
// bounds the decoded audio (≤ 0 means MaxAudioBytes). Wrap r in
// http.MaxBytesReader(MaxRequestBytes) so the body limit is enforced too.
// Errors: invalid_request (malformed JSON), invalid_audio (missing, empty or
// bad base64), unsupported_mime_type (missing mime_type), audio_too_large.
// The mime type is returned as sent; Service.TranscribeAudio validates it.
func DecodeSTTRequest(r io.Reader, maxAudio int64) (Audio, error) {
	if maxAudio <= 0 {
		maxAudio = MaxAudioBytes
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var a Audio
	var haveAudio, haveMime bool
	if err := expectByte(br, '{'); err != nil {
		return Audio{}, err
	}
	for first := true; ; first = false {
		c, err := nextNonSpace(br)
		if err != nil {
			return Audio{}, err
		}
		if c == '}' && first {
			break
		}
		if !first {
			if c == '}' {
				break
			}
			if c != ',' {
				return Audio{}, badJSON("expected , or }")
			}
			if c, err = nextNonSpace(br); err != nil {
				return Audio{}, err
			}
		}
		if c != '"' {
			return Audio{}, badJSON("expected a field name")
		}
		key, err := readShortString(br, 256)
		if err != nil {
			return Audio{}, err
		}
		if err := expectByte(br, ':'); err != nil {
			return Audio{}, err
		}
		c, err = nextNonSpace(br)
		if err != nil {
			return Audio{}, err
		}
		switch {
		case key == "audio" && c == '"':
			if haveAudio {
				return Audio{}, badJSON("audio given twice")
			}
			haveAudio = true
			if a.Data, err = decodeBase64(&jsonStringReader{r: br}, maxAudio); err != nil {
				return Audio{}, err
			}
		case key == "mime_type" && c == '"':
			if a.MimeType, err = readShortString(br, 1024); err != nil {
				return Audio{}, err
			}
			haveMime = true
		case (key == "audio" || key == "mime_type") && c != 'n':
			return Audio{}, badJSON(key + " must be a string")
		default: // unknown field or null: skip the value
			if err := br.UnreadByte(); err != nil {
				return Audio{}, badJSON("unreadable body")
			}
			if err := skipValue(br); err != nil {
				return Audio{}, err
			}
		}
	}
	if !haveAudio || len(a.Data) == 0 {
		return Audio{}, domain.Invalid(CodeInvalidAudio, "audio is required")
	}
	if !haveMime {
		return Audio{}, domain.Invalid(CodeUnsupportedMIME, "mime_type is required")
	}
	return a, nil
}

// DecodeBase64 decodes base64 text from r (standard or URL-safe alphabet,
// padded or not, line breaks and a data: URL prefix allowed) into at most
// limit bytes. Errors are invalid_audio or audio_too_large.
func DecodeBase64(r io.Reader, limit int64) ([]byte, error) {
	return decodeBase64(r, limit)
}

func decodeBase64(r io.Reader, limit int64) ([]byte, error) {
	dec := base64.NewDecoder(base64.StdEncoding, newB64Normalizer(r))
	var out []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := dec.Read(buf)
		if int64(len(out))+int64(n) > limit {
			return nil, tooLarge(limit)
		}
		if len(out)+n > cap(out) {
			// Double explicitly: append grows large slices by 1.25x, which
			// would allocate ~5x the audio in total instead of ~2x.
			grown := make([]byte, len(out), min(max(2*cap(out), 64<<10, len(out)+n), int(limit)))
			copy(grown, out)
			out = grown
		}
		out = append(out, buf[:n]...)
		if err == io.EOF {
			break
		}
		if errors.Is(err, io.ErrUnexpectedEOF) { // base64 cut short
			return nil, domain.Invalid(CodeInvalidAudio, "audio is not valid base64")
		}
		if err != nil {
			return nil, mapReadErr(err)
		}
	}
	if len(out) == 0 {
		return nil, domain.Invalid(CodeInvalidAudio, "audio is empty")
	}
	return out, nil
}

func tooLarge(limit int64) error {
	return &domain.Error{Kind: domain.ErrTooLarge, Code: CodeTooLarge,
		Message: "audio exceeds " + humanBytes(limit)}
}

func humanBytes(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// mapReadErr turns errors met while reading the body into domain errors.
func mapReadErr(err error) error {
	var de *domain.Error
	var mbe *http.MaxBytesError
	var ce base64.CorruptInputError
	switch {
	case errors.As(err, &de):
		return err
	case errors.As(err, &mbe):
		return &domain.Error{Kind: domain.ErrTooLarge, Code: CodeTooLarge,
			Message: "request body exceeds " + humanBytes(mbe.Limit)}
	case errors.As(err, &ce):
		return domain.Invalid(CodeInvalidAudio, "audio is not valid base64")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badJSON("unexpected end of body")
	default:
		return domain.Invalid(CodeInvalidRequest, "cannot read request body")
	}
}

// errTruncated reports a body that ends inside a string.
var errTruncated = badJSON("unexpected end of body")

func badJSON(msg string) error {
	return domain.Invalid(CodeInvalidRequest, "malformed JSON body: "+msg)
}

func nextNonSpace(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, mapReadErr(err)
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, nil
	}
}

func expectByte(br *bufio.Reader, want byte) error {
	c, err := nextNonSpace(br)
	if err != nil {
		return err
	}
	if c != want {
		return badJSON("expected " + string(want))
	}
	return nil
}

// readShortString reads the rest of a JSON string (after its opening quote)
// of at most limit bytes.
func readShortString(br *bufio.Reader, limit int) (string, error) {
	var sb strings.Builder
	sr := &jsonStringReader{r: br}
	buf := make([]byte, 256)
	for {
		n, err := sr.Read(buf)
		sb.Write(buf[:n])
		if sb.Len() > limit {
			return "", badJSON("string too long")
		}
		if err == io.EOF {
			return sb.String(), nil
		}
		if err != nil {
			return "", mapReadErr(err)
		}
	}
}

// skipValue skips one JSON value of any kind without keeping it.
func skipValue(br *bufio.Reader) error {
	depth := 0
	for {
		c, err := nextNonSpace(br)
		if err != nil {
			return err
		}
		switch c {
		case '{', '[':
			depth++
			if depth > 64 {
				return badJSON("nested too deeply")
			}
			continue
		case '}', ']':
			depth--
			if depth < 0 {
				return badJSON("unexpected " + string(c))
			}
		case '"':
			if _, err := io.Copy(io.Discard, &jsonStringReader{r: br}); err != nil {
				return mapReadErr(err)
			}
		case ',', ':':
			if depth == 0 {
				return badJSON("unexpected " + string(c))
			}
			continue
		default: // number, true, false, null: consume the literal
			for {
				c, err := br.ReadByte()
				if err != nil {
					return mapReadErr(err)
				}
				if !isLiteralByte(c) {
					_ = br.UnreadByte()
					break
				}
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func isLiteralByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// jsonStringReader yields the unescaped contents of a JSON string whose
// opening quote has been consumed, and io.EOF after its closing quote.
type jsonStringReader struct {
	r    *bufio.Reader
	done bool
	pend []byte // unescaped bytes not yet returned
}

func (s *jsonStringReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.pend) > 0 {
			k := copy(p[n:], s.pend)
			s.pend = s.pend[k:]
			n += k
			continue
		}
		if s.done {
			break
		}
		c, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = errTruncated
			}
			return n, err
		}
		switch {
		case c == '"':
			s.done = true
		case c == '\\':
			if err := s.escape(); err != nil {
				return n, err
			}
		case c < 0x20:
			return n, badJSON("control character in string")
		case c >= utf8.RuneSelf:
			// A multi-byte character: the whole sequence must be UTF-8,
			// as bindJSON demands of every other body.
			seq, err := s.utf8Seq(c)
			if err != nil {
				return n, err
			}
			s.pend = append(s.pend[:0], seq...)
		default:
			p[n] = c
			n++
		}
	}
	if n == 0 && s.done {
		return 0, io.EOF
	}
	return n, nil
}

func (s *jsonStringReader) escape() error {
	c, err := s.r.ReadByte()
	if err != nil {
		return errTruncated
	}
	switch c {
	case '"', '\\', '/':
		s.pend = append(s.pend[:0], c)
	case 'b':
		s.pend = append(s.pend[:0], '\b')
	case 'f':
		s.pend = append(s.pend[:0], '\f')
	case 'n':
		s.pend = append(s.pend[:0], '\n')
	case 'r':
		s.pend = append(s.pend[:0], '\r')
	case 't':
		s.pend = append(s.pend[:0], '\t')
	case 'u':
		var h [4]byte
		if _, err := io.ReadFull(s.r, h[:]); err != nil {
			return errTruncated
		}
		v := 0
		for _, x := range h {
			d := hexVal(x)
			if d < 0 {
				return badJSON("bad \\u escape")
			}
			v = v<<4 | d
		}
		r := rune(v)
		switch {
		case r == 0:
			return domain.Invalid(CodeNULCharacter, "a string in the request body contains the NUL character \\u0000")
		case r >= 0xD800 && r < 0xDC00:
			lo, err := s.lowSurrogate()
			if err != nil {
				return err
			}
			r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
		case r >= 0xDC00 && r < 0xE000:
			return errLoneSurrogate
		}
		s.pend = utf8.AppendRune(s.pend[:0], r)
	default:
		return badJSON("bad escape")
	}
	return nil
}

// Codes of text that is not UTF-8 or holds NUL (as bindJSON answers).
const (
	CodeInvalidUTF8   = "invalid_utf8"
	CodeNULCharacter  = "nul_character"
	maxUTF8SeqPending = 3
)

var (
	errInvalidUTF8   = domain.Invalid(CodeInvalidUTF8, "the request body is not valid UTF-8: JSON text must be UTF-8")
	errLoneSurrogate = domain.Invalid(CodeInvalidUTF8, "a string in the request body has an unpaired surrogate escape: not valid UTF-8")
)

// utf8Seq reads the rest of the multi-byte sequence led by c and returns
// it whole, or errInvalidUTF8.
func (s *jsonStringReader) utf8Seq(c byte) ([]byte, error) {
	var need int
	switch {
	case c&0xE0 == 0xC0:
		need = 1
	case c&0xF0 == 0xE0:
		need = 2
	case c&0xF8 == 0xF0:
		need = maxUTF8SeqPending
	default:
		return nil, errInvalidUTF8
	}
	seq := []byte{c}
	for range need {
		b, err := s.r.ReadByte()
		if err != nil {
			return nil, errTruncated
		}
		seq = append(seq, b)
	}
	if !utf8.Valid(seq) {
		return nil, errInvalidUTF8
	}
	return seq, nil
}

// lowSurrogate reads the \uDCxx escape that must follow a high surrogate.
func (s *jsonStringReader) lowSurrogate() (rune, error) {
	var h [6]byte
	if _, err := io.ReadFull(s.r, h[:]); err != nil {
		return 0, errLoneSurrogate
	}
	if h[0] != '\\' || h[1] != 'u' {
		return 0, errLoneSurrogate
	}
	v := rune(0)
	for _, x := range h[2:] {
		d := hexVal(x)
		if d < 0 {
			return 0, badJSON("bad \\u escape")
		}
		v = v<<4 | rune(d)
	}
	if v < 0xDC00 || v >= 0xE000 {
		return 0, errLoneSurrogate
	}
	return v, nil
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// b64Normalizer turns any accepted base64 spelling into padded standard
// base64: it drops a data: URL prefix and whitespace, maps the URL-safe
// alphabet to the standard one and appends missing padding at the end.
type b64Normalizer struct {
	r       *bufio.Reader
	started bool
	count   int // significant characters seen, padding excluded
	padded  bool
	tail    []byte
	eof     bool
}

func newB64Normalizer(r io.Reader) *b64Normalizer {
	return &b64Normalizer{r: bufio.NewReaderSize(r, 32<<10)}
}

func (b *b64Normalizer) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		if err := b.skipDataURL(); err != nil {
			return 0, err
		}
	}
	n := 0
	for n < len(p) {
		if len(b.tail) > 0 {
			k := copy(p[n:], b.tail)
			b.tail = b.tail[k:]
			n += k
			continue
		}
		if b.eof {
			break
		}
		c, err := b.r.ReadByte()
		if err == io.EOF {
			b.eof = true
			if !b.padded && b.count%4 > 1 {
				b.tail = bytes.Repeat([]byte{'='}, 4-b.count%4)
			}
			continue
		}
		if err != nil {
			return n, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '-':
			c = '+'
		case '_':
			c = '/'
		case '=':
			b.padded = true
		}
		if c != '=' {
			b.count++
		}
		p[n] = c
		n++
	}
	if n == 0 && b.eof && len(b.tail) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// skipDataURL drops a leading "data:<type>;base64," if present.
func (b *b64Normalizer) skipDataURL() error {
	head, err := b.r.Peek(5)
	if err != nil && err != io.EOF { // Peek hands over (and clears) read errors
		return err
	}
	if !bytes.EqualFold(head, []byte("data:")) {
		return nil
	}
	prefix, err := b.r.Peek(256)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return err
	}
	i := bytes.IndexByte(prefix, ',')
	if i < 0 {
		return domain.Invalid(CodeInvalidAudio, "audio is not valid base64")
	}
	if !bytes.HasSuffix(bytes.ToLower(prefix[:i]), []byte(";base64")) {
		return domain.Invalid(CodeInvalidAudio, "data URL is not base64")
	}
	_, _ = b.r.Discard(i + 1)
	return nil
}
