package speech

import (
	"bytes"
	"encoding/binary"
	"mime"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// format is what a validated media type tells the providers.
type format struct {
	Container string // "webm", "ogg", "wav", "mp3" or "mp4"
	Codecs    string // the codecs parameter, lower case, may be empty
	Mime      string // base media type, lower case, without parameters
}

// allowedTypes maps accepted media types to their container. The list
// covers what browsers' MediaRecorder produces (Chrome/Edge audio/webm,
// Firefox audio/ogg or audio/webm, Safari audio/mp4) plus common upload
// types.
var allowedTypes = map[string]string{
	"audio/webm":     "webm",
	"audio/ogg":      "ogg",
	"audio/opus":     "ogg",
	"audio/wav":      "wav",
	"audio/wave":     "wav",
	"audio/x-wav":    "wav",
	"audio/vnd.wave": "wav",
	"audio/mpeg":     "mp3",
	"audio/mp3":      "mp3",
	"audio/mp4":      "mp4",
	"audio/m4a":      "mp4",
	"audio/x-m4a":    "mp4",
}

// ParseMIME validates a recording's media type, parameters included
// ("audio/webm;codecs=opus", "audio/ogg; codecs=opus"). It returns an
// unsupported_mime_type error for a missing, malformed or non-audio type.
func ParseMIME(s string) (container string, err error) {
	f, err := parseMIME(s)
	return f.Container, err
}

func parseMIME(s string) (format, error) {
	if strings.TrimSpace(s) == "" {
		return format{}, domain.Invalid(CodeUnsupportedMIME, "mime_type is required")
	}
	mt, params, err := mime.ParseMediaType(s)
	if err != nil {
		return format{}, domain.Invalid(CodeUnsupportedMIME, "mime_type is not a valid media type")
	}
	c, ok := allowedTypes[mt]
	if !ok {
		return format{}, &domain.Error{Kind: domain.ErrInvalid, Code: CodeUnsupportedMIME,
			Message: "unsupported mime_type " + quote(mt) + "; use audio/webm, audio/ogg, audio/wav, audio/mpeg or audio/mp4",
		}
	}
	return format{Container: c, Codecs: strings.ToLower(params["codecs"]), Mime: mt}, nil
}

// opusInfo reports whether data is Opus in a WebM or Ogg container and the
// input sample rate recorded in its OpusHead (RFC 7845 §5.1), which Google
// wants as sampleRateHertz. The header sits in the first kilobytes of both
// containers (WebM CodecPrivate, first Ogg page).
func opusInfo(f format, data []byte) (ok bool, rate int) {
	if f.Container != "webm" && f.Container != "ogg" {
		return false, 0
	}
	if f.Codecs != "" && f.Codecs != "opus" {
		return false, 0
	}
	head := data[:min(len(data), 64<<10)]
	i := bytes.Index(head, []byte("OpusHead"))
	if i < 0 || len(head) < i+16 {
		return false, 0
	}
	rate = int(binary.LittleEndian.Uint32(head[i+12 : i+16]))
	switch rate {
	case 8000, 12000, 16000, 24000, 48000: // the rates Google accepts for Opus
	default:
		rate = 48000 // Opus always decodes at 48 kHz
	}
	return true, rate
}
