package speech

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// lookPath is exec.LookPath; tests replace it through options.
var lookPath = exec.LookPath

// pcmRate is the sample rate pocketsphinx's en-us model and Google's
// LINEAR16 path use: 16 kHz mono signed 16-bit little-endian.
const pcmRate = 16000

// transcoder decodes recordings with ffmpeg.
type transcoder struct {
	lookPath    func(string) (string, error)
	maxDuration time.Duration
}

// toPCM decodes any container ffmpeg understands into 16 kHz mono s16le.
// The recording is written to a file in dir rather than piped, because MP4
// (Safari's audio/mp4, m4a) keeps its index at the end and cannot be
// demuxed from a pipe.
func (t transcoder) toPCM(ctx context.Context, data []byte) ([]byte, error) {
	ffmpeg, err := t.lookPath("ffmpeg")
	if err != nil {
		return nil, notConfigured("ffmpeg is not installed on the server")
	}
	dir, err := os.MkdirTemp("", "lcm-speech-")
	if err != nil {
		return nil, internalErr("cannot create a temporary directory")
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "input")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return nil, internalErr("cannot store the recording")
	}
	maxPCM := int64(t.maxDuration.Seconds()*pcmRate*2) + 1
	out := &capWriter{limit: maxPCM}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, ffmpeg,
		"-nostdin", "-hide_banner", "-loglevel", "error",
		"-i", in, "-vn", "-ar", strconv.Itoa(pcmRate), "-ac", "1", "-f", "s16le", "pipe:1")
	cmd.Stdout = out
	cmd.Stderr = &capWriter{limit: 8 << 10, w: &stderr}
	cmd.WaitDelay = 2 * time.Second // do not hang on pipes after a kill
	err = cmd.Run()
	switch {
	case out.over:
		return nil, &domain.Error{Kind: domain.ErrTooLarge, Code: CodeTooLarge,
			Message: "audio is longer than " + t.maxDuration.String()}
	case ctx.Err() != nil:
		return nil, timeoutErr(ctx, "decoding the audio")
	case err != nil:
		return nil, undecodable(stderr.String(), in)
	case out.buf.Len() < 2:
		return nil, undecodable("no audio stream", in)
	}
	return out.buf.Bytes(), nil
}

// undecodable builds an undecodable_audio error from ffmpeg's stderr, with
// the temporary path replaced so nothing internal leaks.
func undecodable(stderr, path string) error {
	msg := strings.TrimSpace(strings.ReplaceAll(stderr, path, "input"))
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:]) // the last line names the cause
	}
	msg = sanitize(msg, "")
	if msg == "" {
		msg = "ffmpeg failed"
	}
	return &domain.Error{Kind: domain.ErrInvalid, Code: CodeUndecodable,
		Message: "audio cannot be decoded: " + msg}
}

func timeoutErr(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return domain.Unavailable(CodeProviderUnavailable, "speech timed out while "+what)
	}
	return domain.Unavailable(CodeProviderUnavailable, "speech request cancelled while "+what)
}

func internalErr(msg string) error {
	return domain.Unavailable(CodeProviderError, msg)
}

// capWriter keeps at most limit bytes and notes overflow; writing past the
// limit fails, so ffmpeg stops early on overlong audio.
type capWriter struct {
	limit int64
	buf   bytes.Buffer
	w     *bytes.Buffer // if set, write there instead of buf, silently capped
	over  bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	dst := &c.buf
	if c.w != nil {
		dst = c.w
	}
	room := c.limit - int64(dst.Len())
	if int64(len(p)) > room {
		if c.w != nil {
			dst.Write(p[:max(room, 0)])
			return len(p), nil
		}
		c.over = true
		return 0, errors.New("output limit reached")
	}
	return dst.Write(p)
}
