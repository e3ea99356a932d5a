#!/bin/bash
# A stand-in for systemctl on a Debian test host, which has no systemd as
# PID 1: just enough of it for a socket-activated sshd (ssh.socket), so
# LCM's ssh-port runs end to end there. Real systemd code does the work
# systemd would do: "daemon-reload" loads ssh.socket with its drop-ins
# through systemd-analyze (the manager in test mode, systemd 252) and keeps
# the ListenStream list it dumps; "restart ssh.socket" listens there with
# systemd-socket-activate (one sshd -i per connection, as Accept=yes;
# connections survive the restart, as with systemd; a port the socket
# cannot bind fails the restart, and a failed socket listens nowhere). The
# only translation: the test hosts share the machine's network namespace
# and have no address of their own for a wildcard, so 0.0.0.0:P listens
# on the host's own address, [::]:P is recorded but not bound, and port 22
# is served by the host's own sshd (testhosts.sh starts it; it stays).
# Anything else exits 1. Installed as /usr/local/bin/systemctl, which
# comes before /usr/bin in sudo's secure_path and lcm-helper's lookup.
S=/run/lcm-fake-systemd
mkdir -p "$S"
ADDR=$(awk '$1 == "ListenAddress" { sub(/:[0-9]+$/, "", $2); print $2; exit }' /etc/ssh/sshd_config.d/zz-lcm-testhost.conf)
quiet=0
args=()
for a in "$@"; do
  case "$a" in
    --quiet|-q) quiet=1 ;;
    --no-pager) ;;
    --property=*) args+=(-p "${a#--property=}") ;;
    *) args+=("$a") ;;
  esac
done
set -- "${args[@]}"
listening() { (exec 3<>"/dev/tcp/$ADDR/$1") 2>/dev/null; }
case "$1 $2" in
  "is-active ssh.socket")
    if [ -e "$S/ssh.socket.active" ]; then [ $quiet = 1 ] || echo active; exit 0; fi
    [ $quiet = 1 ] || echo inactive; exit 3 ;;
  "is-active "*)
    [ $quiet = 1 ] || echo inactive; exit 3 ;;
  "daemon-reload ")
    SYSTEMD_LOG_LEVEL=debug SYSTEMD_LOG_COLOR=0 systemd-analyze verify ssh.socket 2>&1 |
      awk '$1 == "ListenStream:" { print $2 }' > "$S/ssh.socket.loaded.new"
    mv -f "$S/ssh.socket.loaded.new" "$S/ssh.socket.loaded"
    exit 0 ;;
  "restart ssh.socket")
    [ -f "$S/ssh.socket.loaded" ] || { echo "fake systemctl: run daemon-reload first" >&2; exit 1; }
    want=" $(sed -n 's/^0\.0\.0\.0:\([0-9]*\)$/\1/p' "$S/ssh.socket.loaded" | sort -un | tr '\n' ' ')"
    rm -f "$S/ssh.socket.active"
    # Ports the socket no longer lists close; ports it keeps stay bound
    # (systemd re-creates them; a listener kept is the same to a client).
    for p in "$S"/act.*.pid; do
      [ -f "$p" ] || continue
      port=${p#"$S/act."}; port=${port%.pid}
      if [[ $want != *" $port "* ]] || ! kill -0 "$(cat "$p")" 2>/dev/null; then kill "$(cat "$p")" 2>/dev/null; rm -f "$p"; fi
    done
    for port in $want; do
      [ "$port" = 22 ] && continue
      [ -f "$S/act.$port.pid" ] && continue
      # The sshd of a connection outlives a restart of the socket (as with
      # systemd, whose per-connection units stay): it is started one fork
      # away from systemd-socket-activate, which kills its own children.
      # systemd-socket-activate says "Listening on ADDR:PORT as 3." once
      # bound, or exits when it cannot bind; one that says neither within
      # 3 s (seen now and then right after a restart on a loaded machine)
      # is started again, up to three times.
      for try in 1 2 3; do
        setsid systemd-socket-activate --listen="$ADDR:$port" --accept --inetd \
          /bin/sh -c 'exec 3<&0; setsid /usr/sbin/sshd -i <&3 3<&- &' </dev/null >"$S/act.$port.log" 2>&1 &
        echo $! > "$S/act.$port.pid"
        i=0; while ! grep -q '^Listening on ' "$S/act.$port.log" && kill -0 "$(cat "$S/act.$port.pid")" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
        grep -q '^Listening on ' "$S/act.$port.log" && break
        kill -0 "$(cat "$S/act.$port.pid")" 2>/dev/null || break
        kill "$(cat "$S/act.$port.pid")"
      done
      if ! grep -q '^Listening on ' "$S/act.$port.log" || ! kill -0 "$(cat "$S/act.$port.pid")" 2>/dev/null; then
        pid=$(cat "$S/act.$port.pid"); rc=running; kill -0 "$pid" 2>/dev/null || { wait "$pid"; rc=$?; }
        echo "Job for ssh.socket failed: cannot listen on $ADDR:$port (systemd-socket-activate: $rc; $(cat "$S/act.$port.log"))" >&2
        # A socket unit that failed listens nowhere.
        for p in "$S"/act.*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; rm -f "$p"; done
        : > "$S/ssh.socket.listen"
        touch "$S/ssh.socket.failed"
        exit 1
      fi
    done
    cp "$S/ssh.socket.loaded" "$S/ssh.socket.listen"
    rm -f "$S/ssh.socket.failed"
    touch "$S/ssh.socket.active"
    exit 0 ;;
  "is-failed ssh.socket")
    if [ -e "$S/ssh.socket.failed" ]; then [ $quiet = 1 ] || echo failed; exit 0; fi
    [ $quiet = 1 ] || echo active; exit 1 ;;
  "show ssh.socket")
    if [ "$3 $4" = "-p Listen" ]; then
      while read -r l; do echo "Listen=$l (Stream)"; done < "$S/ssh.socket.listen"
      exit 0
    fi ;;
esac
echo "fake systemctl: $* is not supported" >&2
exit 1
