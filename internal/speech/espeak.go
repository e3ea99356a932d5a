package speech

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// EspeakVoice is one row of `espeak-ng --voices` output.
type EspeakVoice struct {
	Priority       int
	Language       string   // e.g. "en-us"
	Gender         string   // "M", "F" or "" (the part after "/" in Age/Gender)
	Name           string   // VoiceName column, underscores for spaces
	File           string   // File column, e.g. "gmw/en-US"; the -v argument
	OtherLanguages []string // languages from "(en 2)(zh 5)"
}

// otherLang matches one "(code priority)" group of the Other Languages column.
var otherLang = regexp.MustCompile(`\(\s*([^\s()]+)\s+\d+\s*\)`)

// ParseEspeakVoices parses `espeak-ng --voices[=LANG]` output. Columns are
// split on whitespace, since long voice names overflow their column; the
// header and any line not starting with a numeric priority are skipped.
func ParseEspeakVoices(out string) []EspeakVoice {
	var vs []EspeakVoice
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		pty, err := strconv.Atoi(f[0])
		if err != nil {
			continue // header ("Pty Language …") or noise
		}
		v := EspeakVoice{Priority: pty, Language: f[1], Name: f[3], File: f[4]}
		if _, g, ok := strings.Cut(f[2], "/"); ok {
			v.Gender = strings.ToUpper(g)
		}
		for _, m := range otherLang.FindAllStringSubmatch(strings.Join(f[5:], " "), -1) {
			v.OtherLanguages = append(v.OtherLanguages, m[1])
		}
		vs = append(vs, v)
	}
	return vs
}

// espeakSampleRate is espeak-ng's output rate (22050 Hz for its own voices).
const espeakSampleRate = 22050

// espeakToVoices maps parsed rows to Voices matching language ("" = all).
// Variants (File "!v/…") are modifiers rather than voices and are dropped,
// as are MBROLA voices whose database is not installed (espeak lists them
// but cannot speak with them). Name is the File column, which `espeak-ng -v`
// accepts and which is unique, unlike Language and VoiceName.
func espeakToVoices(entries []EspeakVoice, language string, mbrolaInstalled func(string) bool) []Voice {
	out := []Voice{}
	seen := map[string]bool{}
	for _, e := range entries {
		if strings.HasPrefix(e.File, "!v/") || e.Language == "variant" || seen[e.File] {
			continue
		}
		if db, ok := mbrolaDB(e.File); ok && (mbrolaInstalled == nil || !mbrolaInstalled(db)) {
			continue
		}
		codes := []string{CanonicalLanguage(e.Language)}
		for _, o := range e.OtherLanguages {
			c := CanonicalLanguage(o)
			if !slices.Contains(codes, c) {
				codes = append(codes, c)
			}
		}
		if language != "" && !matchesAny(codes, language) {
			continue
		}
		seen[e.File] = true
		out = append(out, Voice{Name: e.File, SSMLGender: ssmlGender(e.Gender),
			LanguageCodes: codes, NaturalSampleRateHertz: espeakSampleRate})
	}
	return out
}

// mbrolaDB returns the MBROLA database an "mb/mb-us1" or "mb/mb-de1-en"
// voice needs ("us1", "de1").
func mbrolaDB(file string) (string, bool) {
	rest, ok := strings.CutPrefix(file, "mb/mb-")
	if !ok {
		return "", false
	}
	db, _, _ := strings.Cut(rest, "-")
	return db, true
}

func ssmlGender(g string) string {
	switch g {
	case "M":
		return "MALE"
	case "F":
		return "FEMALE"
	}
	return "NEUTRAL"
}

// CanonicalLanguage spells a language tag in BCP 47 case: "en-us" → "en-US",
// "sr-latn" → "sr-Latn", "en_GB" → "en-GB"; private-use parts after "x"
// stay lower case.
func CanonicalLanguage(tag string) string {
	parts := strings.Split(strings.ReplaceAll(strings.TrimSpace(tag), "_", "-"), "-")
	private := false
	for i, p := range parts {
		p = strings.ToLower(p)
		switch {
		case i == 0 || private:
		case p == "x":
			private = true
		case len(p) == 2 && isAlpha(p):
			p = strings.ToUpper(p)
		case len(p) == 4 && isAlpha(p):
			p = strings.ToUpper(p[:1]) + p[1:]
		}
		parts[i] = p
	}
	return strings.Join(parts, "-")
}

func isAlpha(s string) bool {
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// matchesAny reports whether a requested language matches one of codes:
// equal, or a prefix ending at a subtag boundary ("en" matches "en-GB"),
// case-insensitively.
func matchesAny(codes []string, want string) bool {
	want = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(want), "_", "-"))
	for _, c := range codes {
		c = strings.ToLower(c)
		if c == want || strings.HasPrefix(c, want+"-") {
			return true
		}
	}
	return false
}
