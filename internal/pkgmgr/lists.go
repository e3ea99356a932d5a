package pkgmgr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ListsAge is how old a server's package lists are: the modification times
// of the repository index files its package manager keeps (apt's
// InRelease/Release files, dnf/yum/zypper repomd.xml, pacman's sync
// databases, apk's APKINDEX archives), read by the command ListsAge builds.
// The server's own clock is used for "now", so a skewed control-plane
// clock does not distort the age.
type ListsAge struct {
	Now    time.Time
	Newest time.Time // zero when Files == 0
	Oldest time.Time // zero when Files == 0
	Files  int
}

// Age is how long ago the newest index file changed; 0 without files.
func (a ListsAge) Age() time.Duration {
	if a.Files == 0 {
		return 0
	}
	return a.Now.Sub(a.Newest)
}

// listsAgeScript prints the server's time and then the mtime of each file
// matching globs, one epoch-seconds number per line. Globs that match
// nothing are skipped (stat's complaint goes to /dev/null); stat -c %Y is
// GNU coreutils and BusyBox alike.
func listsAgeScript(globs ...string) string {
	return "date +%s; stat -c %Y -- " + strings.Join(globs, " ") + " 2>/dev/null; exit 0"
}

// ParseListsAge parses the output of a ListsAge command.
func ParseListsAge(out []byte) (ListsAge, error) {
	var a ListsAge
	bad := lineErrs{parser: "lists age"}
	first := true
	eachLine(out, func(line string) {
		n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil || n < 0 {
			bad.add(line)
			return
		}
		t := time.Unix(n, 0).UTC()
		if first {
			a.Now, first = t, false
			return
		}
		a.Files++
		if a.Newest.IsZero() || t.After(a.Newest) {
			a.Newest = t
		}
		if a.Oldest.IsZero() || t.Before(a.Oldest) {
			a.Oldest = t
		}
	})
	if err := bad.err(); err != nil {
		return ListsAge{}, err
	}
	if first {
		return ListsAge{}, fmt.Errorf("lists age: no output")
	}
	return a, nil
}

// HumanAge renders a duration the way the job output shows list ages:
// "42s", "17m", "5h 12m", "3d 4h".
func HumanAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}
