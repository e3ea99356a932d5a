package speech

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// Local runs ffmpeg, pocketsphinx_continuous and espeak-ng on this host.
// It is safe for concurrent use; at most the configured concurrency of
// transcriptions run at once, the rest wait (or give up with their ctx).
type Local struct {
	model   string // pocketsphinx model directory
	grammar string // JSGF source; "" = general language model
	ttsLang string
	o       options
	tc      transcoder
	slots   chan struct{}
}

func newLocal(s Settings, o options) (*Local, error) {
	grammar := s.Grammar
	if strings.TrimSpace(grammar) == "" && len(s.Phrases) > 0 {
		g, err := PhrasesGrammar(s.Phrases)
		if err != nil {
			return nil, err
		}
		grammar = g
	}
	return &Local{
		model:   orDefault(s.Model, DefaultLocalModel),
		grammar: grammar,
		ttsLang: orDefault(s.TTSLanguage, DefaultLanguage),
		o:       o,
		tc:      transcoder{lookPath: o.lookPath, maxDuration: o.maxDuration},
		slots:   make(chan struct{}, o.concurrency),
	}, nil
}

// LocalAvailable reports whether the local provider's tools and the
// pocketsphinx model in modelDir ("" = DefaultLocalModel) are installed; the
// settings service uses it to default to "local" on a fresh install.
func LocalAvailable(modelDir string) error {
	for _, tool := range []string{"ffmpeg", "pocketsphinx_continuous", "espeak-ng"} {
		if _, err := lookPath(tool); err != nil {
			return notConfigured(tool + " is not installed on the server")
		}
	}
	_, err := modelFiles(orDefault(modelDir, DefaultLocalModel))
	return err
}

// modelFiles returns the pocketsphinx -hmm, -lm and -dict paths of a model
// directory laid out like Debian's pocketsphinx-en-us.
func modelFiles(dir string) (hmm, error) {
	h := hmm{dir: filepath.Join(dir, "en-us"), lm: filepath.Join(dir, "en-us.lm.bin"),
		dict: filepath.Join(dir, "cmudict-en-us.dict")}
	for _, p := range []string{h.dir, h.lm, h.dict} {
		if _, err := os.Stat(p); err != nil {
			return hmm{}, notConfigured("the pocketsphinx model is not installed (package pocketsphinx-en-us)")
		}
	}
	return h, nil
}

type hmm struct{ dir, lm, dict string }

// Transcribe decodes the audio with ffmpeg and recognises it with
// pocketsphinx.
func (l *Local) Transcribe(ctx context.Context, a Audio) (string, error) {
	// ffmpeg probes the container itself; the type is only validated.
	if _, err := parseMIME(a.MimeType); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, l.o.localTimeout)
	defer cancel()
	select {
	case l.slots <- struct{}{}:
		defer func() { <-l.slots }()
	case <-ctx.Done():
		return "", timeoutErr(ctx, "waiting for a free recogniser")
	}
	pcm, err := l.tc.toPCM(ctx, a.Data)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "lcm-speech-")
	if err != nil {
		return "", internalErr("cannot create a temporary directory")
	}
	defer os.RemoveAll(dir)
	return l.recognise(ctx, dir, pcm)
}

// generalSearchArgs tune the general-model (trigram) search for speed:
// -fwdflat no skips the second, flat-lexicon pass; -topn 2 scores 2 instead
// of 4 Gaussians per senone; -pbeam 1e-40 (default 1e-48) prunes phone
// transitions harder. Measured on the test phrases (docs/benchmarks.md,
// "Speech"): pocketsphinx CPU for 10 s of speech 4.3 s → 2.2 s, and the
// word error rate did not get worse (90.6 % → 84.4 % over 160 words), so
// the 3 s budget holds on an idle 2 vCPU host. Grammar mode does not use
// them: its search space is small and it needs wide beams (below).
var generalSearchArgs = []string{"-fwdflat", "no", "-topn", "2", "-pbeam", "1e-40"}

// recognise runs pocketsphinx_continuous on raw 16 kHz PCM.
func (l *Local) recognise(ctx context.Context, dir string, pcm []byte) (string, error) {
	ps, err := l.o.lookPath("pocketsphinx_continuous")
	if err != nil {
		return "", notConfigured("pocketsphinx is not installed on the server")
	}
	m, err := modelFiles(l.model)
	if err != nil {
		return "", err
	}
	raw := filepath.Join(dir, "audio.raw")
	logf := filepath.Join(dir, "pocketsphinx.log")
	if err := os.WriteFile(raw, pcm, 0o600); err != nil {
		return "", internalErr("cannot store the decoded audio")
	}
	args := []string{"-infile", raw, "-samprate", "16000", "-hmm", m.dir, "-dict", m.dict, "-logfn", logf}
	if l.grammar != "" {
		gram := filepath.Join(dir, "grammar.gram")
		if err := os.WriteFile(gram, []byte(l.grammar), 0o600); err != nil {
			return "", internalErr("cannot store the grammar")
		}
		// Wide beams: with pocketsphinx's defaults the grammar search prunes
		// the right path on clean input ("Final result does not match the
		// grammar") and returns nothing; a grammar's search space is small
		// enough that the wider beams cost little time.
		args = append(args, "-jsgf", gram, "-beam", "1e-80", "-pbeam", "1e-80", "-wbeam", "1e-60")
	} else {
		args = append(append(args, "-lm", m.lm), generalSearchArgs...)
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, ps, args...)
	cmd.Stdout = &capWriter{limit: 1 << 20, w: &stdout}
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return "", timeoutErr(ctx, "recognising speech")
	}
	if err != nil {
		return "", &domain.Error{Kind: domain.ErrUnavailable, Code: CodeProviderError,
			Message: "pocketsphinx failed: " + sanitize(pocketsphinxError(logf), "")}
	}
	return parseHypotheses(stdout.String()), nil
}

// pocketsphinxError returns the ERROR lines of a pocketsphinx log (e.g.
// "The word 'x' is missing in the dictionary"), without file names.
func pocketsphinxError(logf string) string {
	b, err := os.ReadFile(logf)
	if err != nil {
		return "exit status non-zero"
	}
	var msgs []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "ERROR:") && !strings.HasPrefix(line, "FATAL") {
			continue
		}
		if i := strings.Index(line, ": "); i >= 0 {
			line = line[i+2:]
		}
		if i := strings.Index(line, ": "); i >= 0 && strings.Contains(line[:i], "line ") {
			line = line[i+2:] // drop `"fsg_search.c", line 141`
		}
		msgs = append(msgs, line)
	}
	if len(msgs) == 0 {
		return "exit status non-zero"
	}
	return strings.Join(msgs[max(0, len(msgs)-3):], "; ")
}

var uttPrefix = regexp.MustCompile(`^\d{6,}: `)

// parseHypotheses joins pocketsphinx_continuous's per-utterance lines.
func parseHypotheses(out string) string {
	var words []string
	for _, line := range strings.Split(out, "\n") {
		line = uttPrefix.ReplaceAllString(strings.TrimSpace(line), "")
		words = append(words, strings.Fields(line)...)
	}
	return strings.Join(words, " ")
}

// Voices lists espeak-ng voices for a language ("" = the TTS language).
func (l *Local) Voices(ctx context.Context, language string) ([]Voice, error) {
	espeak, err := l.o.lookPath("espeak-ng")
	if err != nil {
		return nil, notConfigured("espeak-ng is not installed on the server")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // lists a static table in ~10 ms
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, espeak, "--voices")
	cmd.Stderr = &capWriter{limit: 4 << 10, w: &stderr}
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return nil, timeoutErr(ctx, "listing voices")
	}
	if err != nil {
		return nil, &domain.Error{Kind: domain.ErrUnavailable, Code: CodeProviderError,
			Message: "espeak-ng failed: " + sanitize(stderr.String(), "")}
	}
	entries := ParseEspeakVoices(string(out))
	return espeakToVoices(entries, orDefault(language, l.ttsLang), l.mbrolaInstalled), nil
}

func (l *Local) mbrolaInstalled(db string) bool {
	_, err := os.Stat(filepath.Join(l.o.mbrolaDir, db))
	return err == nil
}

// silenceWAVSeconds is the length of the test recording Verify decodes.
const silenceWAVSeconds = 1

// Verify checks the tools and the model and runs one real decode of a
// second of silence through ffmpeg and pocketsphinx (with the grammar, so a
// grammar naming words missing from the dictionary fails here, at save time).
func (l *Local) Verify(ctx context.Context) error {
	if err := LocalAvailable(l.model); err != nil {
		return err
	}
	_, err := l.Transcribe(ctx, Audio{Data: silenceWAV(silenceWAVSeconds), MimeType: "audio/wav"})
	return err
}
