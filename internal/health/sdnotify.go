package health

import (
	"net"
	"os"
	"strconv"
	"time"
)

// Notifier speaks systemd's sd_notify protocol over $NOTIFY_SOCKET. Without
// the variable (not under systemd) every call is a no-op.
type Notifier struct {
	socket   string
	watchdog time.Duration
}

// NewNotifier reads NOTIFY_SOCKET and WATCHDOG_USEC (and WATCHDOG_PID, which
// must be ours when set).
func NewNotifier() *Notifier {
	n := &Notifier{socket: os.Getenv("NOTIFY_SOCKET")}
	if usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64); err == nil && usec > 0 {
		pid := os.Getenv("WATCHDOG_PID")
		if pid == "" || pid == strconv.Itoa(os.Getpid()) {
			n.watchdog = time.Duration(usec) * time.Microsecond
		}
	}
	return n
}

// WatchdogInterval is systemd's WatchdogSec, 0 when not enabled.
func (n *Notifier) WatchdogInterval() time.Duration { return n.watchdog }

// Notify sends one state line (e.g. "READY=1"). Errors are ignored: a
// missing supervisor must never stop the service.
func (n *Notifier) Notify(state string) {
	if n.socket == "" {
		return
	}
	addr := &net.UnixAddr{Name: n.socket, Net: "unixgram"}
	if addr.Name[0] == '@' { // abstract socket
		addr.Name = "\x00" + addr.Name[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = conn.Write([]byte(state))
}
