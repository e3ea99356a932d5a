package helper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// "authorized-keys write <username>" rewrites LCM's block in the person's
// ~/.ssh/authorized_keys with the keys on stdin (one per line; none empties
// the block), keeping every line outside it; "authorized-keys show
// <username>" prints the block's keys. Only accounts a person owns (UID
// from UID_MIN to 65533, not reserved, not the management user) are
// touched, and nothing in ~/.ssh is followed (see writeKeys).

// ParseKeyLines reads the keys of "authorized-keys write": at most maxKeys
// lines, each a key line CheckKeyLine accepts; blank lines are skipped; a
// carriage return, a NUL or an option prefix is refused.
func ParseKeyLines(raw []byte) ([]string, error) {
	if len(raw) > MaxInput {
		return nil, refuse("input longer than %d bytes", MaxInput)
	}
	var keys []string
	for i, l := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(l) == "" {
			if l != "" {
				return nil, refuse("line %d: white space only", i+1)
			}
			continue
		}
		if err := CheckKeyLine(l); err != nil {
			var ue *UsageError
			if errors.As(err, &ue) {
				return nil, refuse("line %d: %s", i+1, ue.Reason)
			}
			return nil, err
		}
		if len(keys) == maxKeys {
			return nil, refuse("more than %d keys", maxKeys)
		}
		keys = append(keys, l)
	}
	return keys, nil
}

// BlockKeys returns the keys inside LCM's block of an authorized_keys file.
func BlockKeys(content string) []string {
	var keys []string
	in := false
	for _, l := range strings.Split(content, "\n") {
		switch {
		case l == KeysBegin:
			in = true
		case l == KeysEnd:
			in = false
		case in && strings.TrimSpace(l) != "":
			keys = append(keys, l)
		}
	}
	return keys
}

// personAccount looks up an account the helper may change keys of.
func personAccount(username string) (account, error) {
	if err := ValidLinuxUsername(username); err != nil {
		return account{}, err
	}
	if username == os.Getenv("SUDO_USER") {
		return account{}, refuse("authorized-keys never changes the management user %q", username)
	}
	acct, exists, err := lookupAccount(username)
	if err != nil {
		return account{}, err
	}
	if !exists {
		return account{}, fmt.Errorf("no account %s", username)
	}
	if acct.uid < uidMin() || acct.uid >= 65534 {
		return account{}, refuse("%s is a system account (UID %d): the helper does not touch it", username, acct.uid)
	}
	return acct, nil
}

func authorizedKeys(action, username string, stdin io.Reader, stdout io.Writer) error {
	acct, err := personAccount(username)
	if err != nil {
		return err
	}
	if action == "show" {
		ak := filepath.Join(acct.home, ".ssh", "authorized_keys")
		f, err := os.OpenFile(ak, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %v (a symbolic link is refused)", ak, err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", ak)
		}
		b, err := io.ReadAll(io.LimitReader(f, 1<<20))
		if err != nil {
			return err
		}
		w := bufio.NewWriter(stdout)
		for _, k := range BlockKeys(string(b)) {
			fmt.Fprintln(w, k)
		}
		return w.Flush()
	}
	raw, err := readInput(stdin)
	if err != nil {
		return err
	}
	keys, err := ParseKeyLines([]byte(raw))
	if err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, "lcm: "+format+"\n", a...) }
	if err := writeKeys(acct, keys, say); err != nil {
		return err
	}
	say("%d key(s) in LCM's block for %s", len(keys), username)
	return nil
}
