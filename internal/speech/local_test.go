package speech

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// testPhrases are short operator commands spoken by espeak-ng.
var testPhrases = []string{
	"open the settings page",
	"restart the web server",
	"show me the list of servers",
	"please check the disk usage",
	"turn on the lights",
	"the quick brown fox jumps over the lazy dog",
}

// audioFormats encode like the clients do: webm/opus as Chrome's
// MediaRecorder (48 kHz, 32 kb/s), ogg/opus as Firefox, m4a/AAC as Safari.
var audioFormats = []struct {
	mime, ext string
	args      []string
}{
	{"audio/webm;codecs=opus", "webm", []string{"-c:a", "libopus", "-b:a", "32k", "-ar", "48000"}},
	{"audio/ogg; codecs=opus", "ogg", []string{"-c:a", "libopus", "-b:a", "32k", "-ar", "48000"}},
	{"audio/mpeg", "mp3", []string{"-c:a", "libmp3lame", "-b:a", "64k"}},
	{"audio/mp4", "m4a", []string{"-c:a", "aac", "-b:a", "64k"}},
	{"audio/wav", "wav", []string{"-c:a", "pcm_s16le"}},
}

func requireLocalTools(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "espeak-ng", "pocketsphinx_continuous"} {
		testutil.RequireTool(t, tool)
	}
	if _, err := os.Stat(DefaultLocalModel); err != nil {
		testutil.Unavailable(t, "pocketsphinx-en-us model at %s", DefaultLocalModel)
	}
}

// synth speaks text with espeak-ng's default English voice and encodes it
// with ffmpeg;
// extra ffmpeg output options (e.g. padding) go before the codec options.
func synth(t testing.TB, text, ext string, codec []string, extra ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	wav := filepath.Join(dir, "espeak.wav")
	out, err := exec.Command("espeak-ng", "-w", wav, text).CombinedOutput()
	require.NoError(t, err, "%s", out)
	dst := filepath.Join(dir, "speech."+ext)
	args := append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-i", wav}, extra...)
	args = append(append(args, codec...), dst)
	out, err = exec.Command("ffmpeg", args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	b, err := os.ReadFile(dst)
	require.NoError(t, err)
	return b
}

// wordErrors is the word-level Levenshtein distance.
func wordErrors(ref, hyp string) int {
	r, h := strings.Fields(ref), strings.Fields(hyp)
	prev := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur := make([]int, len(h)+1)
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev = cur
	}
	return prev[len(h)]
}

func TestWordErrors(t *testing.T) {
	assert.Equal(t, 0, wordErrors("a b c", "a b c"))
	assert.Equal(t, 1, wordErrors("a b c", "a c"))
	assert.Equal(t, 2, wordErrors("a b c", "a x c d"))
	assert.Equal(t, 3, wordErrors("a b c", ""))
}

func localService(t testing.TB, s Settings) *Service {
	t.Helper()
	s.Provider = ProviderLocal
	svc, err := NewService(s)
	require.NoError(t, err)
	return svc
}

// TestLocalWER transcribes every phrase in every format with the general
// model and with a grammar of the phrases, logging the word error rate.
// The general bound is a regression guard at the measured level (91 %
// overall, see docs/speech.md), not a quality claim; the grammar must be
// exact. With -short only webm runs (each general decode takes ~0.8 s).
func TestLocalWER(t *testing.T) {
	requireLocalTools(t)
	general := localService(t, Settings{})
	grammar := localService(t, Settings{Phrases: testPhrases})
	ctx := context.Background()
	words := 0
	for _, p := range testPhrases {
		words += len(strings.Fields(p))
	}
	totalErrs, totalWords := 0, 0
	for _, f := range audioFormats {
		if testing.Short() && f.ext != "webm" {
			continue
		}
		t.Run(f.ext, func(t *testing.T) {
			errsGeneral := 0
			for _, p := range testPhrases {
				b64 := base64.StdEncoding.EncodeToString(synth(t, p, f.ext, f.args))
				got, err := general.Transcribe(ctx, b64, f.mime)
				require.NoError(t, err)
				e := wordErrors(p, got)
				errsGeneral += e
				t.Logf("general %-45q -> %q (%d errors)", p, got, e)

				got, err = grammar.Transcribe(ctx, b64, f.mime)
				require.NoError(t, err)
				assert.Equal(t, p, got, "grammar mode must be exact")
			}
			totalErrs += errsGeneral
			totalWords += words
			t.Logf("%s: general-model WER %.0f%% (%d/%d words); grammar WER 0%%",
				f.ext, 100*float64(errsGeneral)/float64(words), errsGeneral, words)
		})
	}
	wer := float64(totalErrs) / float64(totalWords)
	t.Logf("overall general-model WER %.1f%% (%d/%d words)", 100*wer, totalErrs, totalWords)
	assert.LessOrEqual(t, wer, 0.95, "general-model WER regressed")
}

func TestLocalErrors(t *testing.T) {
	requireLocalTools(t)
	svc := localService(t, Settings{})
	ctx := context.Background()

	_, err := svc.TranscribeAudio(ctx, Audio{Data: []byte("\x1a\x45\xdf\xa3 definitely not webm"), MimeType: "audio/webm"})
	de := requireCode(t, err, CodeUndecodable, domain.ErrInvalid)
	assert.NotContains(t, de.Message, os.TempDir(), "no temporary paths in messages")

	_, err = svc.Transcribe(ctx, "bm90IGF1ZGlv", "audio/ogg")
	requireCode(t, err, CodeUndecodable, domain.ErrInvalid)

	short, err := NewService(Settings{Provider: ProviderLocal}, WithMaxDuration(500_000_000)) // 0.5 s
	require.NoError(t, err)
	_, err = short.TranscribeAudio(ctx, Audio{Data: synth(t, testPhrases[5], "webm", audioFormats[0].args), MimeType: "audio/webm"})
	requireCode(t, err, CodeTooLarge, domain.ErrTooLarge)

	// A grammar naming a word missing from the dictionary fails Verify with
	// pocketsphinx's reason.
	bad := localService(t, Settings{Phrases: []string{"restart zzqxword"}})
	err = bad.Verify(ctx)
	de = requireCode(t, err, CodeProviderError, nil)
	assert.Contains(t, de.Message, "zzqxword")
}

func TestLocalVerifyAndVoices(t *testing.T) {
	requireLocalTools(t)
	svc := localService(t, Settings{TTSLanguage: "en-us"})
	require.NoError(t, svc.Verify(context.Background()))
	vs, err := svc.Voices(context.Background(), "")
	require.NoError(t, err)
	assert.Contains(t, voiceNames(vs), "gmw/en-US")
	vs, err = svc.Voices(context.Background(), "de")
	require.NoError(t, err)
	assert.Contains(t, voiceNames(vs), "gmw/de")
	vs, err = svc.Voices(context.Background(), "xx-nonexistent")
	require.NoError(t, err)
	assert.Empty(t, vs)
}

func TestLocalMissingTools(t *testing.T) {
	svc, err := NewService(Settings{Provider: ProviderLocal}, func(o *options) {
		o.lookPath = func(string) (string, error) { return "", exec.ErrNotFound }
	})
	require.NoError(t, err)
	_, err = svc.TranscribeAudio(context.Background(), Audio{Data: []byte("x"), MimeType: "audio/wav"})
	requireCode(t, err, CodeNotConfigured, domain.ErrUnavailable)
	_, err = svc.Voices(context.Background(), "")
	requireCode(t, err, CodeNotConfigured, domain.ErrUnavailable)
}

// BenchmarkLocalTranscribe10s transcribes 10 s of webm/opus speech with the
// general model (budget ≤ 3 s per op; see docs/speech.md).
func BenchmarkLocalTranscribe10s(b *testing.B) {
	requireLocalTools(b)
	text := strings.Join(testPhrases, ". ") + ". " + strings.Join(testPhrases[:3], ". ")
	audio := synth(b, text, "webm", audioFormats[0].args, "-af", "apad", "-t", "10")
	svc := localService(b, Settings{})
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := childCPU()
	for b.Loop() {
		if _, err := svc.TranscribeAudio(ctx, Audio{Data: audio, MimeType: "audio/webm;codecs=opus"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((childCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// childCPU is the user+system CPU time of the finished child processes
// (ffmpeg, pocketsphinx): on a loaded host it shows what a transcription
// costs independent of the wait for a CPU.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLocalTranscribe10sGrammar is the same 10 s recording decoded
// with a grammar of the test phrases.
func BenchmarkLocalTranscribe10sGrammar(b *testing.B) {
	requireLocalTools(b)
	text := strings.Join(testPhrases, ". ") + ". " + strings.Join(testPhrases[:3], ". ")
	audio := synth(b, text, "webm", audioFormats[0].args, "-af", "apad", "-t", "10")
	svc := localService(b, Settings{Phrases: testPhrases})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := svc.TranscribeAudio(ctx, Audio{Data: audio, MimeType: "audio/webm;codecs=opus"}); err != nil {
			b.Fatal(err)
		}
	}
}
