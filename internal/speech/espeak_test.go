package speech

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return string(b)
}

// The testdata files are real `espeak-ng --voices[=LANG]` output of
// espeak-ng 1.51 on Debian 12.
func TestParseEspeakVoices(t *testing.T) {
	all := ParseEspeakVoices(readTestdata(t, "espeak-voices.txt"))
	require.Len(t, all, 131) // 132 lines minus the header
	assert.Equal(t, EspeakVoice{Priority: 5, Language: "af", Gender: "M", Name: "Afrikaans", File: "gmw/af"}, all[0])
	var cmn EspeakVoice
	for _, v := range all {
		if v.File == "sit/cmn" {
			cmn = v
		}
	}
	// Long names overflow their column; whitespace splitting still works.
	assert.Equal(t, "Chinese_(Mandarin,_latin_as_English)", cmn.Name)
	assert.Equal(t, []string{"zh-cmn", "zh"}, cmn.OtherLanguages)

	en := ParseEspeakVoices(readTestdata(t, "espeak-voices-en.txt"))
	require.Len(t, en, 29)
	assert.Equal(t, EspeakVoice{Priority: 2, Language: "en-gb", Gender: "M", Name: "English_(Great_Britain)", File: "gmw/en", OtherLanguages: []string{"en"}}, en[0])
	assert.Equal(t, "F", en[7].Gender) // us-mbrola-1
}

func TestEspeakToVoices(t *testing.T) {
	entries := ParseEspeakVoices(readTestdata(t, "espeak-voices-en.txt"))
	none := func(string) bool { return false }
	vs := espeakToVoices(entries, "en-US", none)
	names := voiceNames(vs)
	assert.Equal(t, []string{"gmw/en-US", "gmw/en-US-nyc"}, names, "variants and uninstalled MBROLA voices are dropped")
	assert.Equal(t, Voice{Name: "gmw/en-US", SSMLGender: "MALE", LanguageCodes: []string{"en-US", "en"}, NaturalSampleRateHertz: 22050}, vs[0])

	withUS1 := func(db string) bool { return db == "us1" }
	vs = espeakToVoices(entries, "en-us", withUS1)
	assert.Contains(t, voiceNames(vs), "mb/mb-us1")
	for _, v := range vs {
		if v.Name == "mb/mb-us1" {
			assert.Equal(t, "FEMALE", v.SSMLGender)
		}
	}

	all := espeakToVoices(ParseEspeakVoices(readTestdata(t, "espeak-voices.txt")), "", none)
	assert.Greater(t, len(all), 90)
	zh := espeakToVoices(ParseEspeakVoices(readTestdata(t, "espeak-voices.txt")), "zh", none)
	assert.Equal(t, []string{"sit/cmn", "sit/cmn-Latn-pinyin", "sit/yue", "sit/yue-Latn-jyutping"}, voiceNames(zh))
	assert.Empty(t, espeakToVoices(ParseEspeakVoices(readTestdata(t, "espeak-voices-variant.txt")), "", none))
	assert.NotNil(t, espeakToVoices(nil, "xx", none), "empty list, not null, in JSON")
}

func voiceNames(vs []Voice) []string {
	var n []string
	for _, v := range vs {
		n = append(n, v.Name)
	}
	return n
}

func TestCanonicalLanguage(t *testing.T) {
	for in, want := range map[string]string{
		"en-us": "en-US", "EN_gb": "en-GB", "en-gb-x-gbclan": "en-GB-x-gbclan", "cmn-latn-pinyin": "cmn-Latn-pinyin",
		"en-029": "en-029", "chr-US-Qaaa-x-west": "chr-US-Qaaa-x-west", "de": "de", "": "",
	} {
		assert.Equal(t, want, CanonicalLanguage(in), in)
	}
}

func FuzzParseEspeakVoices(f *testing.F) {
	f.Add(readTestdata(f, "espeak-voices.txt"))
	f.Add(readTestdata(f, "espeak-voices-zh.txt"))
	f.Add(" 5  x --/ a b ((( 1)(y 2)")
	f.Add("Pty Language\n 1 a b c d\n")
	f.Fuzz(func(t *testing.T, out string) {
		entries := ParseEspeakVoices(out)
		for _, e := range entries {
			if e.Language == "" || e.File == "" || strings.ContainsAny(e.File, " \t\n") {
				t.Fatalf("bad entry %+v", e)
			}
		}
		for _, v := range espeakToVoices(entries, "", func(string) bool { return true }) {
			if len(v.LanguageCodes) == 0 || v.NaturalSampleRateHertz != espeakSampleRate {
				t.Fatalf("bad voice %+v", v)
			}
			switch v.SSMLGender {
			case "MALE", "FEMALE", "NEUTRAL":
			default:
				t.Fatalf("bad gender %q", v.SSMLGender)
			}
		}
	})
}

func TestPhrasesGrammar(t *testing.T) {
	g, err := PhrasesGrammar([]string{"Open the settings page!", "  ", "open the SETTINGS page", "don't stop"})
	require.NoError(t, err)
	assert.Equal(t, "#JSGF V1.0;\ngrammar lcm;\npublic <phrase> = open the settings page\n  | don't stop;\n", g)
	_, err = PhrasesGrammar([]string{"?!"})
	requireCode(t, err, CodeInvalidSettings, nil)
}
