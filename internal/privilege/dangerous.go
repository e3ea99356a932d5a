package privilege

import (
	"path"
	"sort"
	"strings"
)

// dangerousPrograms is the one list of programs that can start arbitrary
// commands or write arbitrary files as root, with the reason shown to the
// person confirming a rule. docs/privilege-profiles.md prints it; a test
// keeps the two in step.
var dangerousPrograms = map[string]string{
	// Shells.
	"sh": "shell", "bash": "shell", "dash": "shell", "zsh": "shell", "ksh": "shell", "mksh": "shell",
	"csh": "shell", "tcsh": "shell", "fish": "shell", "ash": "shell", "busybox": "shell",
	"rbash": "shell", "screen": "terminal multiplexer", "tmux": "terminal multiplexer", "script": "runs a shell",
	// Interpreters.
	"perl": "interpreter", "ruby": "interpreter", "php": "interpreter", "node": "interpreter",
	"nodejs": "interpreter", "lua": "interpreter", "tclsh": "interpreter", "wish": "interpreter",
	"expect": "interpreter", "irb": "interpreter", "gdb": "debugger runs commands", "strace": "runs a command",
	// Editors (LCM uses sudoedit for file edits).
	"vi": "editor", "vim": "editor", "nvim": "editor", "view": "editor", "rvim": "editor", "nano": "editor",
	"pico": "editor", "emacs": "editor", "ed": "editor", "joe": "editor", "mcedit": "editor", "sed": "stream editor writes files",
	// Pagers.
	"less": "pager", "more": "pager", "most": "pager", "pg": "pager", "man": "pager",
	// Run other programs or write files anywhere.
	"dd": "writes any file", "tee": "writes any file", "cp": "overwrites any file", "mv": "overwrites any file",
	"install": "overwrites any file", "ln": "replaces any file", "rsync": "writes any file and runs commands",
	"tar": "writes any file and runs commands", "zip": "runs commands", "unzip": "writes any file",
	"chmod": "changes any permission", "chown": "changes any owner", "chgrp": "changes any group",
	"setfacl": "changes any permission", "chattr": "changes file attributes",
	"find": "runs commands (-exec)", "xargs": "runs commands", "awk": "interpreter", "gawk": "interpreter",
	"mawk": "interpreter", "nawk": "interpreter", "env": "runs commands", "nice": "runs commands",
	"nohup": "runs commands", "timeout": "runs commands", "stdbuf": "runs commands", "taskset": "runs commands",
	"ionice": "runs commands", "chroot": "runs commands", "nsenter": "runs commands", "unshare": "runs commands",
	"setsid": "runs commands", "flock": "runs commands", "watch": "runs commands", "time": "runs commands",
	"systemd-run": "runs commands", "run-parts": "runs commands", "crontab": "schedules commands",
	"at": "schedules commands", "sudo": "runs commands", "su": "runs a shell", "doas": "runs commands",
	"pkexec": "runs commands", "ssh": "runs commands", "scp": "writes any file", "git": "runs hooks and pagers",
	"make": "runs commands", "mount": "mounts over any path", "passwd": "changes passwords",
	"visudo": "edits sudo rights", "useradd": "creates users", "usermod": "changes any user", "vipw": "editor",
}

// dangerousPrefixes match versioned interpreters (python3, python3.11,
// perl5.36, php8.2, ruby3.1, lua5.4, pip ...).
var dangerousPrefixes = map[string]string{
	"python": "interpreter", "pypy": "interpreter", "perl": "interpreter", "php": "interpreter",
	"ruby": "interpreter", "lua": "interpreter", "pip": "installs and runs code", "node": "interpreter",
}

// dangerousSubActions are sub-actions of otherwise safe programs that start
// an editor, a shell or a container with host access.
var dangerousSubActions = map[string]map[string]string{
	"systemctl": {"edit": "starts an editor"},
	"docker":    {"exec": "runs commands in a container", "run": "runs any container", "cp": "writes any file", "create": "creates any container"},
	"podman":    {"exec": "runs commands in a container", "run": "runs any container", "cp": "writes any file", "create": "creates any container"},
	"apt-get":   {"install": "installs packages that run scripts", "-o": "sets hooks"},
	"apt":       {"install": "installs packages that run scripts"},
}

// Dangerous returns why a command rule can start arbitrary commands, or ""
// when it cannot. Only command rules can be dangerous: sudoedit and ACLs
// are LCM's safe forms.
func Dangerous(r Rule) string {
	if r.Kind != KindCommand && r.Kind != "" || len(r.Argv) == 0 {
		return ""
	}
	base := path.Base(r.Argv[0])
	if why, ok := dangerousPrograms[base]; ok {
		return why
	}
	for p, why := range dangerousPrefixes {
		if strings.HasPrefix(base, p) {
			return why
		}
	}
	if subs := dangerousSubActions[base]; subs != nil {
		for _, a := range r.Argv[1:] {
			if why, ok := subs[a]; ok {
				return a + ": " + why
			}
		}
	}
	return ""
}

// DangerousPrograms returns the list for documentation and the UI: program
// (or prefix followed by "*") and reason, sorted.
func DangerousPrograms() [][2]string {
	var out [][2]string
	for p, why := range dangerousPrograms {
		out = append(out, [2]string{p, why})
	}
	for p, why := range dangerousPrefixes {
		out = append(out, [2]string{p + "*", why})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func isEditor(base string) bool { return dangerousPrograms[base] == "editor" }
