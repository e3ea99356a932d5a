#!/usr/bin/env python3
"""Side-by-side fan-out: LCM's bulk security upgrade against Ansible's
`-m raw` running the exact same script on the same simulated Debian hosts,
interleaved, several rounds. Run it through scripts/fanout-compare.sh, which
builds the binaries; see docs/benchmarks.md.

LCM side: the real lcm-api (all-in-one: embedded NATS, worker, SQLite unless
--database-url) onboards the cmd/fleetsim hosts through its API (probe, join
with a bootstrap password), then each round is one POST
/api/v1/security/update-all, timed until GET /api/v1/jobs/bulk/{id} reports
every job final (a job is final only after its inventory is ingested).

Ansible side: `ansible all -m raw -a '<script>' -f FORKS` as the bootstrap
user, the script being pkgmgr's APT security upgrade exactly as LCM sends it
(internal/pkgmgr/testdata/commands_apt.golden, "upgrade-security").

Measured per round: wall time; CPU seconds of lcm-api (utime+stime from
/proc) or of the ansible process tree (/usr/bin/time); peak RSS of lcm-api
(VmHWM, reset before each round) or of the largest ansible process; CPU of
the simulator. The hosts keep their pending updates (-keep-pending), so
every round does the same work.
"""
import argparse
import concurrent.futures as cf
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK  # utime, stime


def vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def vm_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def rss_parts(pid):
    """The RSS split the kernel reports: anonymous memory (heap, stacks)
    and file pages (the binary's code, mapped files)."""
    parts = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("RssAnon", "RssFile", "RssShmem"):
                parts[k] = int(v.split()[0]) / 1024
    return ", ".join(f"{k} {v:.0f} MiB" for k, v in parts.items())


def reset_hwm(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


class API:
    def __init__(self, base):
        self.base, self.token = base, ""

    def call(self, method, path, body=None, ok=(200, 202)):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        out = json.loads(raw) if raw else None
        if status not in ok:
            raise RuntimeError(f"{method} {path}: {status} {raw[:300]!r}")
        return out


def upgrade_script(repo):
    text = open(os.path.join(repo, "internal/pkgmgr/testdata/commands_apt.golden")).read()
    m = re.search(r"^## upgrade-security\n(.*?)\n\n## ", text, re.S | re.M)
    if not m:
        sys.exit("upgrade-security command not found in commands_apt.golden")
    return m.group(1)


def start_fleetsim(binary, n, upgrade_time):
    p = subprocess.Popen([binary, "-n", str(n), "-latency", "0", "-upgrade-time", upgrade_time, "-keep-pending",
                          "-packages", "400", "-upgradable", "40", "-security", "12"],
                         stdout=subprocess.PIPE, text=True)
    hosts = [json.loads(p.stdout.readline()) for _ in range(n)]
    return p, hosts


def start_api(binary, workdir, database_url, concurrency, profile_port=0):
    port = free_port()
    cfg = {"jwt_secret": "b" * 48, "port": port, "agent_port": 0, "data_dir": "data"}
    if profile_port:
        cfg.update({"metrics_port": profile_port, "metrics_pprof": True})
    if database_url:
        cfg["database"] = {"url": database_url}
    if concurrency:
        cfg["worker"] = {"concurrency": concurrency}
    path = os.path.join(workdir, "config.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    log = open(os.path.join(workdir, "api.log"), "w+")
    p = subprocess.Popen([binary, "-config", path, "--dev"], cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    api = API(base)
    deadline = time.time() + 30
    while True:
        try:
            api.call("GET", "/api/v1/health")
            break
        except Exception:
            if time.time() > deadline or p.poll() is not None:
                log.seek(0)
                sys.exit("lcm-api did not become healthy:\n" + log.read()[-2000:])
            time.sleep(0.1)
    for _ in range(50):
        log.seek(0)
        m = re.search(r"password: (\S+)", log.read())
        if m:
            break
        time.sleep(0.1)
    api.token = api.call("POST", "/api/v1/auth/login", {"username": "admin", "password": m.group(1)})["token"]
    return p, api


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def onboard(api, hosts):
    def one(h):
        host, port = h["addr"].rsplit(":", 1)
        probe = api.call("POST", "/api/v1/servers/probe", {"host": host, "port": int(port)})
        if probe["fingerprint_sha256"] != h["fingerprint"]:
            raise RuntimeError(f"probe {h['addr']}: fingerprint mismatch")
        j = api.call("POST", "/api/v1/servers/join", {"name": f"sim-{h['index']:05d}", "host": host, "port": int(port),
                                                      "username": "debian", "auth": "password", "password": "bootstrap",
                                                      "host_key": probe["host_key"]})
        return j["job_id"]

    with cf.ThreadPoolExecutor(16) as ex:
        jobs = list(ex.map(one, hosts))
    pending = set(jobs)
    deadline = time.time() + 600
    while pending:
        for jid in list(pending):
            st = api.call("GET", f"/api/v1/jobs/{jid}")["status"]
            if st == "success":
                pending.discard(jid)
            elif st in ("failed", "aborted", "blocked"):
                raise RuntimeError(f"join {jid} {st}")
        if time.time() > deadline:
            raise RuntimeError(f"{len(pending)} joins still running")
        time.sleep(0.5)


def first_refresh(api):
    """An inventory refresh of every server, as any fleet has had before a
    security run (LCM refreshes on a schedule): the run then reads each
    server's stored inventory digest. Not timed."""
    run = api.call("POST", "/api/v1/jobs/bulk", {"action": "refresh", "all": True})
    while not run["progress"]["done"]:
        time.sleep(0.5)
        run = api.call("GET", f"/api/v1/jobs/bulk/{run['bulk_id']}")
    ok = run["progress"]["counts"].get("success", 0)
    if ok != run["progress"]["jobs"]:
        raise RuntimeError(f"first refresh: {ok} of {run['progress']['jobs']} succeeded")


def fetch(url, path, timeout=120):
    with urllib.request.urlopen(url, timeout=timeout) as r, open(path, "wb") as f:
        f.write(r.read())


def lcm_round(api, api_pid, sim_pid, n, profile=None):
    """profile: (pprof base URL, directory, round) to write a CPU profile of
    the round and a heap profile 1.5 s into it."""
    reset_hwm(api_pid)
    threads = []
    if profile:
        base, d, r = profile
        threads = [threading.Thread(target=fetch, args=(f"{base}/debug/pprof/profile?seconds=8", os.path.join(d, f"lcm-cpu-{r}.pprof"))),
                   threading.Timer(1.5, fetch, args=(f"{base}/debug/pprof/heap", os.path.join(d, f"lcm-heap-{r}.pprof"))),
                   threading.Timer(1.6, fetch, args=(f"{base}/debug/pprof/heap?debug=1", os.path.join(d, f"lcm-heap-{r}.txt")))]
        for t in threads:
            t.start()
    c0, s0, t0 = cpu_seconds(api_pid), cpu_seconds(sim_pid), time.monotonic()
    run = api.call("POST", "/api/v1/security/update-all")
    while not run["progress"]["done"]:
        time.sleep(0.25)
        run = api.call("GET", f"/api/v1/jobs/bulk/{run['bulk_id']}")
    wall = time.monotonic() - t0
    for t in threads:
        t.join()
    failed = [it for it in run["items"] if it.get("status") not in (None, "success")][:3]
    for it in failed:
        j = api.call("GET", f"/api/v1/jobs/{it['job_id']}")
        print(f"  {it['server_name']}: {j.get('status')}: {j.get('error', '')[:300]}", flush=True)
    ok = run["progress"]["counts"].get("success", 0)
    return {"wall": wall, "cpu": cpu_seconds(api_pid) - c0, "rss": vm_hwm_mib(api_pid),
            "sim_cpu": cpu_seconds(sim_pid) - s0, "ok": ok, "n": n}


def ansible_round(inventory, script, forks, sim_pid, n, workdir):
    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_SSH_ARGS="-o ControlMaster=no -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR",
               ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3")
    tfile = os.path.join(workdir, "time")
    s0, t0 = cpu_seconds(sim_pid), time.monotonic()
    out = subprocess.run(["/usr/bin/time", "-o", tfile, "-f", "%U %S %M", "ansible", "all", "-i", inventory, "-u", "debian",
                          "-m", "raw", "-a", script, "-f", str(forks)], env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    u, s, m = open(tfile).read().split()[-3:]
    ok = len(re.findall(r"\| CHANGED \| rc=0", out.stdout))
    return {"wall": wall, "cpu": float(u) + float(s), "rss": int(m) / 1024, "sim_cpu": cpu_seconds(sim_pid) - s0, "ok": ok, "n": n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--forks", type=int, default=50)
    ap.add_argument("--upgrade-time", default="1s")
    ap.add_argument("--api-bin", required=True)
    ap.add_argument("--fleetsim-bin", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--database-url", default="")
    ap.add_argument("--concurrency", type=int, default=0, help="worker.concurrency (0: lcm-api's default)")
    ap.add_argument("--profile", default="", help="directory for lcm-api's CPU and heap profiles of each LCM round (and the heap after the idle wait)")
    ap.add_argument("--lcm-only", action="store_true", help="skip the Ansible rounds (to iterate on LCM; prints no ratio)")
    ap.add_argument("--idle-wait", type=float, default=0, help="after the rounds, wait this many seconds and report lcm-api's RSS (the pool drains after 90 s)")
    a = ap.parse_args()
    if not shutil.which("ansible"):
        sys.exit("ansible is not installed (apt-get install -y ansible)")
    script = upgrade_script(a.repo)
    work = tempfile.mkdtemp(prefix="fanout-compare-")
    sim, hosts = start_fleetsim(a.fleetsim_bin, a.hosts, a.upgrade_time)
    api_proc = None
    try:
        inventory = os.path.join(work, "inventory")
        with open(inventory, "w") as f:
            for h in hosts:
                host, port = h["addr"].rsplit(":", 1)
                f.write(f"sim{h['index']} ansible_host={host} ansible_port={port}\n")
        pport = free_port() if a.profile else 0
        if a.profile:
            os.makedirs(a.profile, exist_ok=True)
        api_proc, api = start_api(a.api_bin, work, a.database_url, a.concurrency, pport)
        t0 = time.monotonic()
        onboard(api, hosts)
        first_refresh(api)
        print(f"machine: {os.cpu_count()} CPUs, {cpu_model()}, {platform.system()} {platform.release()}, load {os.getloadavg()[0]:.2f}")
        print(f"ansible: {subprocess.run(['ansible', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}")
        print(f"hosts={a.hosts} rounds={a.rounds} forks={a.forks} upgrade-time={a.upgrade_time} "
              f"database={'postgres' if a.database_url else 'sqlite'} worker.concurrency={a.concurrency or 'default'}")
        print(f"onboarded {a.hosts} hosts through the API (probe + join + a first inventory refresh) in {time.monotonic() - t0:.1f} s; "
              f"lcm-api RSS after onboarding {vm_hwm_mib(api_proc.pid):.0f} MiB peak")
        print(f"{'round':>5} {'side':8} {'wall s':>7} {'CPU s':>7} {'peak MiB':>9} {'sim CPU s':>9} {'ok':>9}")
        res = {"lcm": [], "ansible": []}
        for r in range(1, a.rounds + 1):
            order = ["lcm", "ansible"] if r % 2 else ["ansible", "lcm"]
            for side in order:
                if side == "ansible" and a.lcm_only:
                    continue
                if side == "lcm":
                    prof = (f"http://127.0.0.1:{pport}", a.profile, r) if a.profile else None
                    x = lcm_round(api, api_proc.pid, sim.pid, a.hosts, prof)
                else:
                    x = ansible_round(inventory, script, a.forks, sim.pid, a.hosts, work)
                res[side].append(x)
                print(f"{r:>5} {side:8} {x['wall']:7.1f} {x['cpu']:7.1f} {x['rss']:9.0f} {x['sim_cpu']:9.1f} {x['ok']:>4}/{x['n']}", flush=True)
                time.sleep(2)
        if a.idle_wait:
            time.sleep(a.idle_wait)
            print(f"lcm-api RSS after {a.idle_wait:.0f} s idle: {vm_rss_mib(api_proc.pid):.0f} MiB ({rss_parts(api_proc.pid)})")
            if a.profile:
                fetch(f"http://127.0.0.1:{pport}/debug/pprof/heap?gc=1", os.path.join(a.profile, "lcm-heap-idle.pprof"))
                fetch(f"http://127.0.0.1:{pport}/debug/pprof/heap?debug=1", os.path.join(a.profile, "lcm-heap-idle.txt"))
        if a.lcm_only:
            print(f"median wall: LCM {statistics.median(x['wall'] for x in res['lcm']):.1f} s; "
                  f"CPU {statistics.median(x['cpu'] for x in res['lcm']):.1f} s; peak RSS {max(x['rss'] for x in res['lcm']):.0f} MiB")
            return
        lw = statistics.median(x["wall"] for x in res["lcm"])
        aw = statistics.median(x["wall"] for x in res["ansible"])
        print(f"median wall: LCM {lw:.1f} s, Ansible -f {a.forks} {aw:.1f} s -> LCM faster by {aw / lw:.1f}x")
        print(f"median CPU: lcm-api {statistics.median(x['cpu'] for x in res['lcm']):.1f} s, "
              f"ansible {statistics.median(x['cpu'] for x in res['ansible']):.1f} s; "
              f"peak RSS: lcm-api {max(x['rss'] for x in res['lcm']):.0f} MiB, "
              f"largest ansible process {max(x['rss'] for x in res['ansible']):.0f} MiB")
    finally:
        if api_proc:
            api_proc.terminate()
            api_proc.wait(timeout=30)
        sim.terminate()
        sim.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
