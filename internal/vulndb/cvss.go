package vulndb

import (
	"math"
	"sort"
	"strings"
)

// CVSS3Score computes the CVSS v3.0/v3.1 base score of a vector
// ("CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:H/A:H" → 8.1) with the
// specification's formulas and Roundup. ok is false for a vector that
// lacks a base metric or has an unknown value.
func CVSS3Score(vector string) (float64, bool) {
	parts := strings.Split(vector, "/")
	if len(parts) < 9 || !strings.HasPrefix(parts[0], "CVSS:3.") {
		return 0, false
	}
	m := map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, ":")
		if !ok {
			return 0, false
		}
		m[k] = v
	}
	changed := m["S"] == "C"
	if m["S"] != "U" && !changed {
		return 0, false
	}
	av, ok1 := map[string]float64{"N": 0.85, "A": 0.62, "L": 0.55, "P": 0.2}[m["AV"]]
	ac, ok2 := map[string]float64{"L": 0.77, "H": 0.44}[m["AC"]]
	prs := map[string]float64{"N": 0.85, "L": 0.62, "H": 0.27}
	if changed {
		prs = map[string]float64{"N": 0.85, "L": 0.68, "H": 0.5}
	}
	pr, ok3 := prs[m["PR"]]
	ui, ok4 := map[string]float64{"N": 0.85, "R": 0.62}[m["UI"]]
	cia := map[string]float64{"H": 0.56, "L": 0.22, "N": 0}
	c, ok5 := cia[m["C"]]
	i, ok6 := cia[m["I"]]
	a, ok7 := cia[m["A"]]
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return 0, false
	}
	iss := 1 - (1-c)*(1-i)*(1-a)
	var impact float64
	if changed {
		impact = 7.52*(iss-0.029) - 3.25*math.Pow(iss-0.02, 15)
	} else {
		impact = 6.42 * iss
	}
	expl := 8.22 * av * ac * pr * ui
	if impact <= 0 {
		return 0, true
	}
	if changed {
		return roundup(math.Min(1.08*(impact+expl), 10)), true
	}
	return roundup(math.Min(impact+expl, 10)), true
}

// roundup is CVSS v3.1's Roundup (Appendix A): the smallest number with
// one decimal that is >= x, robust against floating-point noise.
func roundup(x float64) float64 {
	n := int64(math.Round(x * 100000))
	if n%10000 == 0 {
		return float64(n) / 100000
	}
	return float64(n/10000+1) / 10
}

// CVSSRating maps a CVSS v3 base score to its qualitative rating.
func CVSSRating(score float64) string {
	switch {
	case score >= 9:
		return SevCritical
	case score >= 7:
		return SevHigh
	case score >= 4:
		return SevMedium
	case score > 0:
		return SevLow
	}
	return SevUnknown
}

func sortStrings(s []string) { sort.Strings(s) }
