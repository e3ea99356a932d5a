package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// Explain says in plain words why a server could not be reached or logged
// into, with a hint what to check: "connection refused on port 22 of
// 192.0.2.10: is sshd running and listening on that port?". It is what
// the add-server wizard shows (probe errors, a failed join job) and what a
// job's error reads. Errors it does not know keep their own text.
func Explain(err error) string {
	if err == nil {
		return ""
	}
	host, port := "the server", "22"
	op := ""
	var re *Error
	if errors.As(err, &re) {
		host, port = splitAddr(re.Addr, host, port)
		op = re.Op
	}
	var hk *HostKeyMismatchError
	var dns *net.DNSError
	switch {
	case errors.As(err, &hk):
		host, _ = splitAddr(hk.Addr, host, port)
		return fmt.Sprintf("host key changed: %s presented %s but %s is pinned; no command was sent. "+
			"If the change is legitimate (the server was reinstalled), probe and join the server again", host, hk.Got, hk.Expected)
	case errors.Is(err, ErrAuth):
		return fmt.Sprintf("%s refused the login: check the user name and the key or password, and that this user may log in over SSH (AllowUsers, PermitRootLogin, an expired password)", host)
	case errors.Is(err, ErrAborted), errors.Is(err, context.Canceled):
		return fmt.Sprintf("cancelled before %s answered", host)
	case errors.As(err, &dns):
		name := dns.Name
		if name == "" {
			name = host
		}
		if dns.IsNotFound {
			return fmt.Sprintf("host name %s could not be resolved (no such host in DNS): check the spelling, or enter the IP address", name)
		}
		return fmt.Sprintf("host name %s could not be resolved (the DNS lookup failed): check the DNS servers of the LCM host, or enter the IP address", name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("connection refused on port %s of %s: is sshd running and listening on that port (systemctl status ssh), and is it the right port?", port, host)
	case errors.Is(err, syscall.EHOSTUNREACH):
		return fmt.Sprintf("no route to host %s: the host is down or not reachable from the LCM host; check the address, and firewalls or routers between", host)
	case errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("network unreachable: the LCM host has no route to %s; check the address (an IPv6 address without IPv6 connectivity?)", host)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		strings.Contains(err.Error(), "reading version string"):
		if op == "dial" || op == "handshake" || op == "probe" {
			return fmt.Sprintf("%s closed the connection on port %s before the SSH login: is that port an SSH server? "+
				"sshd may also refuse this address (fail2ban, TCP wrappers, MaxStartups)", host, port)
		}
		return fmt.Sprintf("the connection to %s was lost while the job ran: the server may have rebooted or the network dropped", host)
	case errors.Is(err, ErrIdle):
		return fmt.Sprintf("the command on %s printed nothing for too long and was stopped (idle timeout)", host)
	case timedOut(err):
		switch op {
		case "dial", "probe", "":
			return fmt.Sprintf("no answer from %s on port %s in time: the host may be down, or a firewall drops the connection", host, port)
		case "handshake":
			return fmt.Sprintf("%s accepted the connection on port %s but the SSH login did not finish in time: is that port an SSH server, and is the server overloaded?", host, port)
		}
		return fmt.Sprintf("the command on %s did not finish within its time limit", host)
	case strings.Contains(err.Error(), "no common algorithm"):
		return fmt.Sprintf("%s offers no SSH key exchange or host key algorithm LCM accepts: the SSH server is very old or restricted", host)
	case errors.Is(err, ErrUnreachable) && (op == "session" || op == "exec" || op == "run"):
		why := ""
		if re.Err != nil {
			why = " (" + re.Err.Error() + ")"
		}
		return fmt.Sprintf("the connection to %s was lost while the job ran: the server may have rebooted or the network dropped%s", host, why)
	case errors.Is(err, ErrUnreachable):
		if re != nil && re.Err != nil {
			return fmt.Sprintf("could not reach %s on port %s: %v", host, port, re.Err)
		}
		return fmt.Sprintf("could not reach %s on port %s", host, port)
	}
	return err.Error()
}

// timedOut reports a deadline: a category, a context deadline or a
// network timeout.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// splitAddr splits "host:port", keeping the defaults for missing parts.
func splitAddr(addr, host, port string) (string, string) {
	if addr == "" {
		return host, port
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, port
	}
	return h, p
}
