// Package privilege validates and renders the sudo rights of distributed
// Linux users: a privilege profile is a list of rules, each an exact argv of
// a root command (or a file edit through sudoedit, or a directory ACL),
// validated exactly as the spec says and rendered to one sudoers file per
// profile group (lcm-prof-<slug>). It is pure: no I/O, no store.
package privilege

import (
	"fmt"
	"path"
	"strings"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/helper"
)

// Rule kinds.
const (
	// KindCommand is an exact argv of a command run through sudo.
	KindCommand = "command"
	// KindEdit lets the group edit one file through sudoedit.
	KindEdit = "edit"
	// KindACL grants the group access to a directory through POSIX ACLs
	// (setfacl, with default ACLs); it renders no sudoers line.
	KindACL = "acl"
)

// Rule is one right of a profile (the domain's ProfileRule).
type Rule = domain.ProfileRule

// Rejection codes: each rejection class of the spec has its own code.
const (
	CodeEmpty           = "empty_rule"
	CodeUnknownKind     = "unknown_rule_kind"
	CodeRelativePath    = "relative_path"
	CodePathNotClean    = "path_not_clean"
	CodeWildcard        = "wildcard"
	CodeShellMeta       = "shell_metacharacter"
	CodeComma           = "comma"
	CodeWhitespace      = "whitespace_in_argument"
	CodeBareCommand     = "bare_command"
	CodeAllCommand      = "all_command"
	CodeSudoedit        = "sudoedit_as_command"
	CodeDangerous       = "dangerous_unconfirmed"
	CodeBadRunAs        = "invalid_run_as"
	CodeBadPerms        = "invalid_acl_perms"
	CodeTooLong         = "too_long"
	CodeUnknownParam    = "unknown_param"
	CodeMissingParam    = "missing_param"
	CodeInvalidParam    = "invalid_param_value"
	CodeNoVariant       = "no_family_variant"
	CodeUnknownFamily   = "unknown_family"
	CodeTemplateInvalid = "invalid_template"
)

// Error is one rejected rule: a machine-readable code, the rule's index in
// its list and a message for people.
type Error struct {
	Code    string `json:"code"`
	Index   int    `json:"index"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("rule %d: %s (%s)", e.Index+1, e.Message, e.Code) }

func reject(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Limits keep a profile and its sudoers file bounded.
const (
	maxArgs   = 64
	maxArgLen = 256
)

// shellMeta are characters a shell or sudoers would interpret. A rule is an
// exact argv: none of them may appear (sudoers would treat '#' as a
// comment, '\' as an escape, '"' as quoting, '!' as negation).
const shellMeta = ";&|`$<>(){}\\\"'!#~^"

// wildcards are sudoers/fnmatch pattern characters.
const wildcards = "*?[]"

// bareNeedsSubAction lists programs that are refused without a sub-action:
// `systemctl` alone would allow every unit operation.
var bareNeedsSubAction = map[string]bool{"systemctl": true, "apt-get": true, "docker": true}

// noPager lists programs LCM runs with --no-pager (a pager can start a shell).
var noPager = map[string]bool{"systemctl": true, "journalctl": true}

// Normalize returns the rule as LCM stores and renders it: --no-pager added
// to systemctl and journalctl, an editor command on one absolute file
// turned into a sudoedit rule, an empty kind read as a command. It does not
// validate; call Validate on the result.
func Normalize(r Rule) Rule {
	if r.Kind == "" {
		r.Kind = KindCommand
	}
	if r.RunAs == "root" {
		r.RunAs = ""
	}
	if r.Kind != KindCommand || len(r.Argv) == 0 {
		return r
	}
	argv := append([]string(nil), r.Argv...)
	base := path.Base(argv[0])
	if isEditor(base) && len(argv) == 2 && strings.HasPrefix(argv[1], "/") {
		return Rule{Kind: KindEdit, Path: argv[1], RunAs: r.RunAs}
	}
	if noPager[base] && !contains(argv[1:], "--no-pager") {
		argv = append([]string{argv[0], "--no-pager"}, argv[1:]...)
	}
	r.Argv = argv
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Validate checks one normalized rule; the returned *Error has Index 0.
func Validate(r Rule) *Error {
	if r.RunAs != "" && !validRunAs(r.RunAs) {
		return reject(CodeBadRunAs, "run-as user %q is not a valid user name", r.RunAs)
	}
	switch r.Kind {
	case KindCommand:
		return validateCommand(r)
	case KindEdit:
		if r.RunAs != "" {
			return reject(CodeBadRunAs, "a file edit runs as root")
		}
		return validatePath(r.Path, "file")
	case KindACL:
		if r.RunAs != "" {
			return reject(CodeBadRunAs, "a directory ACL has no run-as user")
		}
		if r.Perms != "r" && r.Perms != "rw" && r.Perms != "rwx" {
			return reject(CodeBadPerms, "ACL permissions must be r, rw or rwx, not %q", r.Perms)
		}
		if e := validatePath(r.Path, "directory"); e != nil {
			return e
		}
		if r.Path == "/" {
			return reject(CodePathNotClean, "an ACL on / is refused")
		}
		return nil
	default:
		return reject(CodeUnknownKind, "unknown rule kind %q (command, edit or acl)", r.Kind)
	}
}

func validateCommand(r Rule) *Error {
	if len(r.Argv) == 0 || strings.TrimSpace(r.Argv[0]) == "" {
		return reject(CodeEmpty, "the rule has no command")
	}
	if len(r.Argv) > maxArgs {
		return reject(CodeTooLong, "at most %d arguments", maxArgs)
	}
	if strings.EqualFold(r.Argv[0], "ALL") {
		return reject(CodeAllCommand, "ALL is never a command")
	}
	for i, a := range r.Argv {
		if e := validateWord(a, i); e != nil {
			return e
		}
	}
	if e := validatePath(r.Argv[0], "command"); e != nil {
		return e
	}
	base := path.Base(r.Argv[0])
	if base == "sudoedit" || base == "sudo" && len(r.Argv) > 1 && r.Argv[1] == "-e" {
		return reject(CodeSudoedit, "use an edit rule for file edits")
	}
	if bareNeedsSubAction[base] && !hasSubAction(r.Argv[1:]) {
		return reject(CodeBareCommand, "%s needs a sub-action (for example %s)", base, subActionExample(base))
	}
	if d := Dangerous(r); d != "" && !r.Confirmed {
		return reject(CodeDangerous, "%s can start arbitrary commands (%s): confirm this rule explicitly", base, d)
	}
	return nil
}

// validateWord checks one argv element, in the order of the spec's classes.
func validateWord(a string, i int) *Error {
	if a == "" {
		return reject(CodeEmpty, "argument %d is empty", i)
	}
	if len(a) > maxArgLen {
		return reject(CodeTooLong, "argument %d is longer than %d bytes", i, maxArgLen)
	}
	if strings.ContainsAny(a, wildcards) {
		return reject(CodeWildcard, "argument %q holds a wildcard (* ? [ ])", a)
	}
	if strings.Contains(a, ",") {
		return reject(CodeComma, "argument %q holds a comma", a)
	}
	if strings.ContainsAny(a, shellMeta) {
		return reject(CodeShellMeta, "argument %q holds a shell metacharacter", a)
	}
	for _, c := range a {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' {
			return reject(CodeWhitespace, "argument %q holds whitespace: give each word as its own argument", a)
		}
		if c < 0x20 || c == 0x7f {
			return reject(CodeShellMeta, "argument %d holds a control character", i)
		}
	}
	return nil
}

func validatePath(p, what string) *Error {
	if p == "" {
		return reject(CodeEmpty, "the %s path is empty", what)
	}
	if e := validateWord(p, 0); e != nil {
		return e
	}
	if !strings.HasPrefix(p, "/") {
		return reject(CodeRelativePath, "the %s %q is not an absolute path", what, p)
	}
	if path.Clean(p) != p {
		return reject(CodePathNotClean, "the %s path %q is not clean (no //, . or .. parts, no trailing /)", what, p)
	}
	return nil
}

// hasSubAction reports whether args hold a word that is not an option.
func hasSubAction(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return true
		}
	}
	return false
}

func subActionExample(base string) string {
	switch base {
	case "systemctl":
		return "systemctl restart nginx.service"
	case "apt-get":
		return "apt-get update"
	default:
		return "docker restart web"
	}
}

// validRunAs is the run-as user rule: exactly what lcm-helper accepts
// when it writes the sudoers file in restricted sudo mode (a lower-case
// letter or _, then lower-case letters, digits, _ and -, at most 32), so
// a profile LCM accepts is never refused on the server.
func validRunAs(u string) bool { return helper.ValidUser(u) }

// ValidateAll normalizes and validates a list of rules; it returns the
// normalized rules and every rejection (with its index).
func ValidateAll(rules []Rule) ([]Rule, []*Error) {
	out := make([]Rule, len(rules))
	var errs []*Error
	for i, r := range rules {
		out[i] = Normalize(r)
		if e := Validate(out[i]); e != nil {
			e.Index = i
			errs = append(errs, e)
		}
	}
	return out, errs
}
