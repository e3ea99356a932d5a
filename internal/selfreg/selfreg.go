// Package selfreg registers the host LCM runs on as the managed server
// ServerName. The package installer creates a management user with a key
// and drops that key into a handover file (mode 0600); on the next start
// Run encrypts the key into the database and deletes the file, whatever
// the outcome. Opt-out, containers, an unreachable SSH service, a loopback
// endpoint already managed and an earlier deletion all skip registration.
package selfreg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/store"
)

const (
	// ServerName is the fixed name of the self entry.
	ServerName = "lcm-host"
	// SettingDisabled is set when the self entry was deleted.
	SettingDisabled = "self_server_disabled"
	// SettingServerID remembers which server is the self entry.
	SettingServerID = "self_server_id"
	// HandoverFile is the key handover file's name in the data directory.
	HandoverFile = "selfmanage.key"
	// OptOutFile is the installer's opt-out marker in the data directory.
	OptOutFile = "selfmanage.disabled"
	// OptOutEnv set to 1 opts out.
	OptOutEnv = "LCM_NO_SELF_MANAGE"
	// SSHAddr is the loopback SSH endpoint that is registered.
	SSHAddr = "127.0.0.1:22"
	// probeTimeout bounds the loopback probe (a local answer is immediate).
	probeTimeout = 5 * time.Second
)

// Inputs are the facts the decision rests on.
type Inputs struct {
	OptOut          bool // LCM_NO_SELF_MANAGE=1 or the opt-out marker
	InContainer     bool
	SSHReachable    bool // 127.0.0.1:22 answered with a host key
	LoopbackManaged bool // a server at a loopback host on port 22 exists
	Disabled        bool // self_server_disabled is set
	HandoverKey     bool // a usable handover key was read
}

// Decision is whether to register and why.
type Decision struct {
	Register bool
	Reason   string
}

// Decide applies the self-registration table.
func Decide(in Inputs) Decision {
	switch {
	case in.OptOut:
		return Decision{Reason: "opted out (" + OptOutEnv + "=1 or opt-out marker)"}
	case in.Disabled:
		return Decision{Reason: "the self entry was deleted earlier (" + SettingDisabled + ")"}
	case in.InContainer:
		return Decision{Reason: "running in a container"}
	case in.LoopbackManaged:
		return Decision{Reason: "loopback port 22 is already managed"}
	case !in.HandoverKey:
		return Decision{Reason: "no usable handover key"}
	case !in.SSHReachable:
		return Decision{Reason: "no SSH service reachable on " + SSHAddr}
	}
	return Decision{Register: true, Reason: "registered as " + ServerName}
}

// Deps are Run's collaborators; zero values take the defaults.
type Deps struct {
	Store   *store.Store
	Fleet   *fleet.Service
	Log     *slog.Logger
	DataDir string
	// HandoverPath defaults to <DataDir>/selfmanage.key.
	HandoverPath string
	// Getenv defaults to os.Getenv.
	Getenv func(string) string
	// InContainer defaults to DetectContainer.
	InContainer func() bool
	// Probe defaults to sshexec.Probe.
	Probe func(ctx context.Context, addr string) (ssh.PublicKey, string, error)
}

// Run decides and, when the table allows, registers the self entry. The
// handover file is deleted in every case.
func Run(ctx context.Context, d Deps) (Decision, error) {
	d = withDefaults(d)
	defer removeHandover(d.HandoverPath, d.Log)
	var in Inputs
	in.OptOut = d.Getenv(OptOutEnv) == "1" || exists(filepath.Join(d.DataDir, OptOutFile))
	in.InContainer = d.InContainer()
	key := readHandover(d.HandoverPath, d.Log)
	in.HandoverKey = key != ""
	var disabled bool
	if _, err := d.Store.GetSetting(ctx, SettingDisabled, &disabled); err != nil {
		return Decision{Reason: "settings unreadable"}, err
	}
	in.Disabled = disabled
	eps, err := d.Store.ServerEndpoints(ctx)
	if err != nil {
		return Decision{Reason: "servers unreadable"}, err
	}
	in.LoopbackManaged = loopbackManaged(eps)
	in.SSHReachable = true // assumed until probed: probe only when it decides
	if dec := Decide(in); !dec.Register {
		return dec, nil
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	hostKey, _, perr := d.Probe(pctx, SSHAddr)
	cancel()
	in.SSHReachable = perr == nil
	dec := Decide(in)
	if !dec.Register {
		d.Log.Info("self-registration skipped", "reason", dec.Reason, "probe_err", perr)
		return dec, nil
	}
	host, port, _ := net.SplitHostPort(SSHAddr)
	p, _ := strconv.Atoi(port)
	srv, err := d.Fleet.Adopt(ctx, fleet.AdoptRequest{Name: ServerName, Host: host, Port: p,
		Username: domain.ManagementUser, PrivateKey: key, HostKey: sshexec.AuthorizedKey(hostKey)})
	if srv.ID != "" {
		if serr := d.Store.PutSetting(ctx, SettingServerID, srv.ID); serr != nil {
			return dec, serr
		}
	}
	if err != nil {
		if srv.ID == "" {
			return Decision{Reason: "registration failed: " + err.Error()}, err
		}
		d.Log.Warn("self entry registered, first connectivity check not started", "server_id", srv.ID, "err", err)
	}
	d.Log.Info("self-registration: registered", "server", ServerName, "server_id", srv.ID, "host_key", srv.HostKeyFingerprint)
	return dec, nil
}

// DiscardHandover deletes the handover file in dataDir without
// registering: for starts that skip self-registration altogether (demo
// mode), since the plaintext key must not outlive the next start.
func DiscardHandover(dataDir string, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	removeHandover(filepath.Join(dataDir, HandoverFile), log)
}

func removeHandover(path string, log *slog.Logger) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Error("self-registration: could not delete the handover file", "path", path, "err", err)
	}
}

// OnDeleted is the fleet deletion hook: deleting the self entry sets
// self_server_disabled so it is never created again.
func OnDeleted(st *store.Store, log *slog.Logger) fleet.DeletedHook {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, serverID string) {
		var id string
		if ok, err := st.GetSetting(ctx, SettingServerID, &id); err != nil || !ok || id != serverID {
			return
		}
		if err := st.PutSetting(ctx, SettingDisabled, true); err != nil {
			log.Error("self entry deleted but "+SettingDisabled+" not saved", "err", err)
			return
		}
		log.Info("self entry deleted; it will not be registered again", "server_id", serverID)
	}
}

func withDefaults(d Deps) Deps {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.HandoverPath == "" {
		d.HandoverPath = filepath.Join(d.DataDir, HandoverFile)
	}
	if d.Getenv == nil {
		d.Getenv = os.Getenv
	}
	if d.InContainer == nil {
		d.InContainer = DetectContainer
	}
	if d.Probe == nil {
		d.Probe = sshexec.Probe
	}
	return d
}

// readHandover returns the handover key, or "" when there is none or it
// is refused (not a regular file of mode 0600, or not a private key).
func readHandover(path string, log *slog.Logger) string {
	fi, err := os.Lstat(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Error("self-registration: handover file unreadable", "path", path, "err", err)
		}
		return ""
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		log.Error("self-registration: handover file refused, it must be a regular file of mode 0600",
			"path", path, "mode", fmt.Sprintf("%v", fi.Mode()))
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Error("self-registration: handover file unreadable", "path", path, "err", err)
		return ""
	}
	if _, err := ssh.ParsePrivateKey(b); err != nil {
		log.Error("self-registration: handover file holds no usable private key", "path", path, "err", err)
		return ""
	}
	return string(b)
}

// loopbackManaged reports a server at 127.0.0.0/8, ::1 or localhost on
// port 22, whatever its name.
func loopbackManaged(eps []store.ServerEndpoint) bool {
	for _, e := range eps {
		if (e.Port == 22 || e.Port == 0) && IsLoopback(e.Host) {
			return true
		}
	}
	return false
}

// IsLoopback reports a loopback host: 127.0.0.0/8, ::1 or "localhost".
func IsLoopback(host string) bool {
	h := strings.TrimSuffix(strings.Trim(strings.TrimSpace(host), "[]"), ".")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// DetectContainer reports whether this process runs in a container.
func DetectContainer() bool {
	return detectContainer("/")
}

func detectContainer(root string) bool {
	for _, f := range []string{".dockerenv", "run/.containerenv"} {
		if exists(filepath.Join(root, f)) {
			return true
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc/1/environ")); err == nil {
		for _, kv := range bytes.Split(b, []byte{0}) {
			if bytes.HasPrefix(kv, []byte("container=")) {
				return true
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc/1/cgroup")); err == nil {
		for _, hint := range []string{"docker", "kubepods", "containerd", "libpod", "lxc"} {
			if bytes.Contains(b, []byte(hint)) {
				return true
			}
		}
	}
	return false
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
