package helper

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
)

// The account scan in restricted mode: "linux-user-scan" (no argument,
// nothing on stdin, read-only) prints exactly what the full-mode scan
// script of internal/actions prints, section by section, so the same
// parser reads both:
//
//	### passwd   getent passwd
//	### uidmin   UID_MIN of /etc/login.defs (awk '$1=="UID_MIN"{print $2}')
//	### shadow   name:<first character of the password field>:<expiry> — never the hash
//	### groups   getent group
//	### lastlog  LC_ALL=C lastlog (nothing when it is missing or fails)
//	### managed  the accounts whose ~/.ssh/authorized_keys holds the line KeysBegin
//	### end
//
// One difference on purpose: like linux-user, the helper follows no
// symbolic link in a person's ~/.ssh (the script's grep would), and it
// reads at most maxScanKeys bytes of a key file; a key file behind a link
// counts as not managed. LCM never writes one that way.

// maxScanKeys bounds how much of one authorized_keys the scan reads.
const maxScanKeys = 1 << 20

// Hooks of the scan (variables so the pure parts can be tested).
var (
	// nssList prints a database as getent does ("passwd", "shadow",
	// "group"); without getent, the file's entries. getent's complaints go
	// to stderr.
	nssList = getentList
	// scanLastlog prints LC_ALL=C lastlog; errors are ignored, as the
	// script's "2>/dev/null || true" does.
	scanLastlog = func(w io.Writer) { _ = runTool(w, io.Discard, nil, "lastlog") }
	// keysManaged reports whether home's authorized_keys holds the block.
	keysManaged = homeHoldsKeyBlock
)

// linuxUserScan writes the scan to stdout.
func linuxUserScan(stdout, stderr io.Writer) error {
	passwd, err := nssList("passwd", stderr)
	if err != nil {
		return err
	}
	shadow, err := nssList("shadow", stderr)
	if err != nil {
		return err
	}
	group, err := nssList("group", stderr)
	if err != nil {
		return err
	}
	defs, _ := os.ReadFile(loginDefs)
	var b bytes.Buffer
	b.WriteString("### passwd\n" + passwd)
	b.WriteString("### uidmin\n" + ScanUIDMin(string(defs)))
	b.WriteString("### shadow\n" + ScanShadow(shadow))
	b.WriteString("### groups\n" + group)
	b.WriteString("### lastlog\n")
	scanLastlog(&b)
	b.WriteString("### managed\n")
	for _, l := range records(passwd) {
		// The script's "IFS=: read -r n _ _ _ _ h _".
		f := strings.Split(l, ":")
		home := ""
		if len(f) > 5 {
			home = f[5]
		}
		if keysManaged(home) {
			b.WriteString(f[0] + "\n")
		}
	}
	b.WriteString("### end\n")
	_, err = stdout.Write(b.Bytes())
	return err
}

// records splits command output into its lines (awk's records: no empty
// record after the final newline).
func records(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// ScanUIDMin is the script's awk '$1=="UID_MIN"{print $2}' over login.defs.
func ScanUIDMin(defs string) string {
	var b strings.Builder
	for _, l := range records(defs) {
		f := strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) > 0 && f[0] == "UID_MIN" {
			if len(f) > 1 {
				b.WriteString(f[1])
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// ScanShadow is the script's awk -F: '{print $1":"substr($2,1,1)":"$8}'
// over getent shadow: the name, the first character of the password field
// (! locked, * none, $ a hash) and the expiry day. The hash never leaves.
func ScanShadow(shadow string) string {
	var b strings.Builder
	for _, l := range records(shadow) {
		f := strings.Split(l, ":")
		field := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		first := field(1)
		if len(first) > 1 {
			first = first[:1]
		}
		b.WriteString(f[0] + ":" + first + ":" + field(7) + "\n")
	}
	return b.String()
}

// getentList runs getent db (the accounts of every NSS source, as the
// script sees them); without getent it reads the file.
func getentList(db string, stderr io.Writer) (string, error) {
	if _, ok := lookTool("getent"); ok {
		var out bytes.Buffer
		// getent's exit code is ignored, as the script ignores it; a
		// missing passwd section makes the parser refuse the scan.
		_ = runTool(&out, stderr, nil, "getent", db)
		return out.String(), nil
	}
	file := map[string]string{"passwd": passwdFile, "shadow": shadowFile, "group": groupFile}[db]
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, l := range records(string(raw)) {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String(), nil
}

// homeHoldsKeyBlock: home/.ssh/authorized_keys is a regular file (neither
// it nor ~/.ssh a symbolic link) with the line KeysBegin in its first
// maxScanKeys bytes. The path is built as the script builds it
// ("$h/.ssh/authorized_keys").
func homeHoldsKeyBlock(home string) bool {
	sshDir := home + "/.ssh"
	if fi, err := os.Lstat(sshDir); err != nil || !fi.IsDir() {
		return false
	}
	// O_NONBLOCK: a FIFO put there by the person does not hang the scan.
	f, err := os.OpenFile(sshDir+"/authorized_keys", os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxScanKeys))
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return HasKeyBlock(string(b))
}

// HasKeyBlock is grep -qxF KeysBegin: some line is exactly the marker.
func HasKeyBlock(content string) bool {
	for _, l := range strings.Split(content, "\n") {
		if l == KeysBegin {
			return true
		}
	}
	return false
}
