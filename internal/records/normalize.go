package records

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
)

// NormalizeSet validates a record set for the zone with the given origin and
// returns it in canonical form (see RecordSet). The name may be relative
// ("www", "@") or absolute inside the zone ("www.example.com."); relative
// names inside record values (an MX "10 mail") are resolved against the
// zone. Every error is a domain.Invalid whose message starts with the set,
// e.g. `www A: "300.1.1.1" is not an IPv4 address`.
func NormalizeSet(zoneOrigin string, s RecordSet) (RecordSet, error) {
	origin, err := NormalizeOrigin(zoneOrigin)
	if err != nil {
		return RecordSet{}, err
	}
	return normalize(origin, s, false)
}

// NormalizeTemplateSet validates a set that is not bound to a zone yet — a
// template's or a sync group's. Its name must be relative; relative names in
// its values stay relative, so "10 mail" means mail.<zone> in every zone the
// set is applied to. Apply it to a zone with NormalizeSet(zone, set).
func NormalizeTemplateSet(s RecordSet) (RecordSet, error) {
	if strings.HasSuffix(strings.TrimSpace(s.Name), ".") {
		return RecordSet{}, invalidSet(s, "absolute_name",
			fmt.Sprintf("%q: names in templates and sync groups must be relative", s.Name))
	}
	return normalize(templateOrigin, s, true)
}

// NormalizeSets normalizes every set for a zone and checks the list as a
// whole: no two sets with the same key and no CNAME beside other data at one
// name. The error is the first problem; its Details hold every message.
func NormalizeSets(zoneOrigin string, sets []RecordSet) ([]RecordSet, error) {
	origin, err := NormalizeOrigin(zoneOrigin)
	if err != nil {
		return nil, err
	}
	return normalizeList(sets, func(s RecordSet) (RecordSet, error) { return normalize(origin, s, false) })
}

// NormalizeTemplateSets is NormalizeSets for templates and sync groups.
func NormalizeTemplateSets(sets []RecordSet) ([]RecordSet, error) {
	return normalizeList(sets, NormalizeTemplateSet)
}

func normalizeList(sets []RecordSet, norm func(RecordSet) (RecordSet, error)) ([]RecordSet, error) {
	out := make([]RecordSet, 0, len(sets))
	var errs []error
	for _, s := range sets {
		n, err := norm(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, n)
	}
	errs = append(errs, checkCoexistence(out)...)
	if len(errs) > 0 {
		return nil, joinInvalid(errs)
	}
	slices.SortFunc(out, compareSets)
	return out, nil
}

// checkCoexistence reports duplicate keys and CNAMEs that share a name with
// other data (RFC 1034 §3.6.2) within one list of normalized sets.
func checkCoexistence(sets []RecordSet) []error {
	var errs []error
	seen := make(map[SetKey]bool, len(sets))
	types := make(map[string][]string)
	for _, s := range sets {
		if seen[s.Key()] {
			errs = append(errs, invalidSet(s, "duplicate_set", "defined more than once"))
			continue
		}
		seen[s.Key()] = true
		types[s.Name] = append(types[s.Name], s.Type)
	}
	for _, s := range sets {
		if s.Type == "CNAME" && len(types[s.Name]) > 1 {
			errs = append(errs, invalidSet(s, "cname_conflict", "a CNAME cannot share its name with other records"))
		}
	}
	return errs
}

func normalize(origin string, s RecordSet, relOrigin bool) (RecordSet, error) {
	typ := strings.ToUpper(strings.TrimSpace(s.Type))
	if _, ok := supportedTypes[typ]; !ok {
		return RecordSet{}, invalidSet(s, "unsupported_type",
			fmt.Sprintf("type %q is not supported (supported: %s)", s.Type, strings.Join(SupportedTypes(), ", ")))
	}
	rel, fqdn, err := relativeName(origin, s.Name)
	if err != nil {
		return RecordSet{}, prefixInvalid(s, err)
	}
	out := RecordSet{Name: rel, Type: typ}
	label := RecordSet{Name: rel, Type: typ}
	if s.TTL != nil {
		if *s.TTL < MinTTL || *s.TTL > MaxTTL {
			return RecordSet{}, invalidSet(label, "ttl_out_of_range",
				fmt.Sprintf("ttl %d is outside %d..%d", *s.TTL, MinTTL, MaxTTL))
		}
		t := *s.TTL
		out.TTL = &t
	}
	switch {
	case len(s.Records) == 0:
		return RecordSet{}, invalidSet(label, "records_required", "at least one record is required")
	case len(s.Records) > MaxRecordsPerSet:
		return RecordSet{}, invalidSet(label, "too_many_records",
			fmt.Sprintf("%d records, at most %d allowed", len(s.Records), MaxRecordsPerSet))
	case typ == "CNAME" && rel == "@":
		return RecordSet{}, invalidSet(label, "cname_at_apex", "a CNAME cannot be at the zone apex")
	case typ == "CNAME" && len(s.Records) > 1:
		return RecordSet{}, invalidSet(label, "cname_multiple", "a CNAME set holds exactly one record")
	}
	out.Records = make([]string, 0, len(s.Records))
	firstSeen := make(map[string]string, len(s.Records))
	for _, v := range s.Records {
		c, err := canonicalValue(origin, fqdn, typ, v, relOrigin)
		if err != nil {
			var ve *valueError
			if errors.As(err, &ve) {
				return RecordSet{}, invalidSet(label, ve.code, ve.msg)
			}
			return RecordSet{}, invalidSet(label, "invalid_record", err.Error())
		}
		if prev, dup := firstSeen[c]; dup {
			return RecordSet{}, invalidSet(label, "duplicate_record",
				fmt.Sprintf("%q and %q are the same record", prev, v))
		}
		firstSeen[c] = v
		out.Records = append(out.Records, c)
	}
	slices.Sort(out.Records)
	return out, nil
}

// invalidSet builds a domain.Invalid error whose message names the set.
func invalidSet(s RecordSet, code, msg string) error {
	return domain.Invalid(code, setLabel(s)+": "+msg)
}

// prefixInvalid prefixes a domain error from a helper with the set label.
func prefixInvalid(s RecordSet, err error) error {
	var de *domain.Error
	if errors.As(err, &de) {
		return domain.Invalid(de.Code, setLabel(s)+": "+de.Message)
	}
	return invalidSet(s, "invalid", err.Error())
}

// setLabel names a set in messages: its key, or the raw input when the
// name or type is missing.
func setLabel(s RecordSet) string {
	n, t := strings.TrimSpace(s.Name), strings.ToUpper(strings.TrimSpace(s.Type))
	if n == "" {
		n = "(no name)"
	}
	if t == "" {
		t = "(no type)"
	}
	return n + " " + t
}

// joinInvalid returns the first error with every message in Details, so the
// client sees all problems of a request at once.
func joinInvalid(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	var first *domain.Error
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		var de *domain.Error
		if errors.As(e, &de) {
			if first == nil {
				first = de
			}
			msgs = append(msgs, de.Message)
			continue
		}
		msgs = append(msgs, e.Error())
	}
	if first == nil {
		return domain.Invalid("invalid_sets", strings.Join(msgs, "; "))
	}
	return &domain.Error{Kind: domain.ErrInvalid, Code: first.Code,
		Message: fmt.Sprintf("%s (and %d more problems)", first.Message, len(errs)-1), Details: msgs}
}
