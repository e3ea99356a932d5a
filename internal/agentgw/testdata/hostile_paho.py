#!/usr/bin/python3
"""A hostile MQTT client against the LCM agent gateway, written with
Debian's python3-paho-mqtt (1.6) over a TLS WebSocket, plus raw sockets for
what no client library sends (slow loris, half-open connections).

Driven by TestHostileClientsPaho (hostile_paho_test.go): it runs one phase
at a time, prints one line `RESULT <phase> <json>` per phase and then waits
for a line on stdin before the next one, so the test can check between
phases that the real agent still runs commands.

usage: hostile_paho.py HOST PORT VICTIM_ID ATTACKER_ID ATTACKER_SECRET
"""

import base64
import json
import os
import resource
import socket
import ssl
import sys
import time
import uuid

import paho.mqtt.client as mqtt

HOST, PORT, VICTIM, ATTACKER, SECRET = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
TIMEOUT = 30


def tls_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # an attacker does not pin
    return ctx


def no_origin(headers):
    # paho sends an Origin header by default; the gateway refuses every
    # request with one (browsers), so a hostile client drops it.
    headers.pop("Origin", None)
    return headers


def client(client_id, username=None, password=None, protocol=mqtt.MQTTv5):
    c = mqtt.Client(client_id=client_id, protocol=protocol, transport="websockets")
    c.ws_set_options(path="/mqtt", headers=no_origin)
    c.tls_set_context(tls_context())
    if username is not None:
        c.username_pw_set(username, password)
    c.state = {"connack": None, "disconnected": False, "subacks": {}, "published": 0}

    def on_connect(cl, userdata, flags, rc, properties=None):
        cl.state["connack"] = rc.value if hasattr(rc, "value") else int(rc)

    def on_disconnect(cl, userdata, rc, properties=None):
        cl.state["disconnected"] = True
        cl.state["disconnect_reason"] = rc.value if hasattr(rc, "value") else int(rc)

    def on_subscribe(cl, userdata, mid, reason_codes, properties=None):
        cl.state["subacks"][mid] = [r.value if hasattr(r, "value") else int(r) for r in reason_codes]

    def on_publish(cl, userdata, mid):
        cl.state["published"] += 1

    c.on_connect, c.on_disconnect, c.on_subscribe, c.on_publish = on_connect, on_disconnect, on_subscribe, on_publish
    return c


def wait(c, cond, timeout=TIMEOUT):
    end = time.time() + timeout
    while time.time() < end and not cond():
        try:
            c.loop(timeout=0.05)
        except OSError as e:  # ssl.SSLError is one
            # The gateway shut the connection while paho answered it (its
            # WebSocket layer replies to the close frame on a socket TLS has
            # already seen end): the connection is closed, whichever of the
            # two paho noticed first.
            c.state["disconnected"] = True
            c.state.setdefault("disconnect_error", str(e))
    return cond()


def connect(c):
    """Connects and returns the CONNACK reason (None: the connection
    failed or ended without one)."""
    try:
        c.connect(HOST, PORT, keepalive=30)
    except Exception as e:  # refused at the TLS or WebSocket level
        return "error: %s" % e
    wait(c, lambda: c.state["connack"] is not None or c.state["disconnected"])
    return c.state["connack"]


def envelope(typ, **fields):
    m = {"v": 1, "type": typ, "id": str(uuid.uuid4())}
    m.update(fields)
    return json.dumps(m).encode()


def status(marker):
    return envelope("status", state="online", hostname=marker, running=0, time="2026-01-01T00:00:00Z")


def topic(agent, channel):
    return "lcm/a/%s/%s" % (agent, channel)


def phase(name, result):
    print("RESULT %s %s" % (name, json.dumps(result)), flush=True)
    if sys.stdin.readline().strip() != "next":
        sys.exit(0)


def credentials():
    out = {}
    cases = {
        "none": (VICTIM, None, None, mqtt.MQTTv5),
        "wrong secret": (VICTIM, VICTIM, "not-the-secret", mqtt.MQTTv5),
        "another agent's id": (VICTIM, ATTACKER, SECRET, mqtt.MQTTv5),
        "another's secret": (VICTIM, VICTIM, SECRET, mqtt.MQTTv5),
        "not an agent id": ("admin", "admin", "admin", mqtt.MQTTv5),
        "wildcard client id": ("#", "#", SECRET, mqtt.MQTTv5),
        "MQTT 3.1.1 with valid credentials": (ATTACKER, ATTACKER, SECRET, mqtt.MQTTv311),
    }
    for name, (cid, user, pw, proto) in cases.items():
        c = client(cid, user, pw, proto)
        rc = connect(c)
        closed = wait(c, lambda: c.state["disconnected"])
        out[name] = {"connack": rc, "closed": closed}
        try:
            c.disconnect()
        except Exception:
            pass
    return out


def authenticated():
    c = client(ATTACKER, ATTACKER, SECRET)
    rc = connect(c)
    if rc != 0:
        raise SystemExit("the enrolled attacker was refused: %r" % rc)
    return c


def topics():
    c = authenticated()
    subs = {}
    for t in [topic(VICTIM, "cmd"), "#", "+/+/+/+", "lcm/a/+/cmd", "lcm/a/%s/#" % VICTIM, "$SYS/#",
              "$share/g/lcm/a/%s/cmd" % ATTACKER, topic(ATTACKER, "res")]:
        _, mid = c.subscribe(t, qos=1)
        wait(c, lambda: mid in c.state["subacks"] or c.state["disconnected"])
        subs[t] = c.state["subacks"].get(mid)
    # Publishes to other agents' and forbidden topics, each a valid status
    # envelope carrying the marker the test looks for on NATS.
    pubs = [topic(VICTIM, "status"), topic(VICTIM, "res"), topic(ATTACKER, "cmd"), "lcm/a/%s/other" % ATTACKER,
            "$SYS/broker"]  # paho itself refuses wildcard topics in a publish
    for t in pubs:
        info = c.publish(t, status("paho-foreign"), qos=1)
        wait(c, lambda: info.is_published() or c.state["disconnected"], timeout=5)
    c.disconnect()
    return {"suback": subs, "published_to": pubs}


def retained():
    c = authenticated()
    c.publish(topic(ATTACKER, "status"), status("paho-retained"), qos=1, retain=True)
    closed = wait(c, lambda: c.state["disconnected"])
    return {"closed": closed, "disconnect_reason": c.state.get("disconnect_reason")}


def oversized():
    c = authenticated()
    big = b"x" * (2 << 20)
    try:
        c.publish(topic(ATTACKER, "inv"), big, qos=1)
    except (OSError, ssl.SSLError) as e:
        # The gateway closed the connection while the packet was written.
        return {"closed": True, "error": str(e)}
    closed = wait(c, lambda: c.state["disconnected"])
    return {"closed": closed}


def floods():
    out = {}
    for qos, payload in ((2, status("paho-flood")), (1, b"not an envelope")):
        c = authenticated()
        c.max_inflight_messages_set(65535)
        c.max_queued_messages_set(0)
        sent = 0
        for i in range(5000):
            if c.state["disconnected"]:
                break
            try:
                c.publish(topic(ATTACKER, "status"), payload, qos=qos)
                sent += 1
                if i % 100 == 0:
                    c.loop(timeout=0.01)
            except (OSError, ssl.SSLError):
                c.state["disconnected"] = True  # cut off by the gateway: bounded
                break
        try:
            wait(c, lambda: c.state["disconnected"], timeout=5)
        except (OSError, ssl.SSLError):
            c.state["disconnected"] = True
        out["qos%d" % qos] = {"sent": sent, "acknowledged": c.state["published"], "disconnected": c.state["disconnected"]}
        try:
            c.disconnect()
        except Exception:
            pass
    return out


def ws_upgrade():
    """A TLS WebSocket upgraded to /mqtt by hand (no Origin)."""
    s = socket.create_connection((HOST, PORT), timeout=TIMEOUT)
    s = tls_context().wrap_socket(s)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /mqtt HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n"
               % (HOST, PORT, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            raise ConnectionError("closed during the upgrade")
        head += chunk
    status_line = head.split(b"\r\n", 1)[0].decode()
    return s, status_line


def ws_frame(payload):
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x82, 0x80 | len(payload)]) + mask + masked


def closed_by_server(s, timeout):
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(4096):
                return True
    except socket.timeout:
        return False
    except (ConnectionError, ssl.SSLError, OSError):
        return True


def mqtt_connect_bytes():
    """A valid MQTT 5 CONNECT of the attacker, built by hand."""
    def s(x):
        b = x.encode()
        return len(b).to_bytes(2, "big") + b

    def varint(n):
        out = b""
        while True:
            d, n = n % 128, n // 128
            out += bytes([d | (0x80 if n else 0)])
            if not n:
                return out
    var = s("MQTT") + bytes([5, 0xC2]) + (30).to_bytes(2, "big") + bytes([0])
    body = var + s(ATTACKER) + s(ATTACKER) + s(SECRET)
    return bytes([0x10]) + varint(len(body)) + body


def slow_loris():
    out = {}
    # A CONNECT trickled one byte every 200 ms never completes in time.
    s, line = ws_upgrade()
    start = time.time()
    closed = False
    for b in mqtt_connect_bytes():
        try:
            s.sendall(ws_frame(bytes([b])))
        except OSError:
            closed = True
            break
        if closed_by_server(s, 0.2):
            closed = True
            break
    if not closed:
        closed = closed_by_server(s, 60)
    out["trickled connect"] = {"upgrade": line, "closed": closed, "after_s": round(time.time() - start, 1)}
    s.close()
    # An upgraded WebSocket that never sends CONNECT.
    s, line = ws_upgrade()
    out["silent websocket"] = {"upgrade": line, "closed": closed_by_server(s, 60)}
    s.close()
    # A TCP connection that never starts TLS.
    t = socket.create_connection((HOST, PORT), timeout=TIMEOUT)
    out["silent tcp"] = {"closed": closed_by_server(t, 60)}
    t.close()
    return out


def half_open_hold():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    upgraded, refused, failed, tcp = [], 0, 0, []
    for _ in range(300):
        try:
            s, line = ws_upgrade()
            if " 101 " in line:
                upgraded.append(s)
            else:
                refused += 1
                s.close()
        except (OSError, ConnectionError, ssl.SSLError):
            failed += 1
    for _ in range(1000):
        tcp.append(socket.create_connection((HOST, PORT), timeout=TIMEOUT))
    return upgraded, tcp, {"upgraded": len(upgraded), "refused_503": refused, "failed": failed, "tcp": len(tcp)}


def main():
    phase("credentials", credentials())
    phase("topics", topics())
    phase("retained", retained())
    phase("oversized", oversized())
    phase("floods", floods())
    phase("slow loris", slow_loris())
    upgraded, tcp, held = half_open_hold()
    phase("half-open holding", held)
    closed = sum(1 for s in upgraded + tcp if closed_by_server(s, 60))
    for s in upgraded + tcp:
        s.close()
    phase("half-open closed", {"closed": closed, "total": len(upgraded) + len(tcp)})


if __name__ == "__main__":
    main()
