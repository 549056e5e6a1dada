#!/usr/bin/env python3
"""Run `hone fleet --dry-run` over N local repositories at several concurrencies against the mock
model, sampling the process's peak RSS, open file descriptors and threads from /proc, and print a
Markdown table. Usage:

fleet_bench.py HONE_BIN WORKDIR N DELAY CONC... [--sample K]

Ideal is the serial time divided by the concurrency. The serial time is measured in the same run:
all N repositories at concurrency 1 (the first CONC must then be 1), or, with --sample K, K of them
at concurrency 1, scaled to N (a serial run of 1,000 repositories at 1 s per model request would
take about 40 minutes).
"""
import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("hone")
ap.add_argument("work")
ap.add_argument("n", type=int)
ap.add_argument("delay", type=float)
ap.add_argument("concs", type=int, nargs="+")
ap.add_argument("--sample", type=int, default=0)
a = ap.parse_args()
hone, work, n, delay = a.hone, os.path.abspath(a.work), a.n, a.delay


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def origins():
    """N bare copies of one small repository whose check fails until status.txt says fixed."""
    os.makedirs(os.path.join(work, "origins"), exist_ok=True)
    template = os.path.join(work, "template.git")
    if not os.path.exists(template):
        src = os.path.join(work, "src")
        os.makedirs(src, exist_ok=True)
        git(work, "init", "-q", "--bare", template)
        git(src, "init", "-q")
        open(os.path.join(src, "status.txt"), "w").write("broken\n")
        open(os.path.join(src, "check.sh"), "w").write("grep -qx fixed status.txt\n")
        git(src, "add", "-A")
        git(src, "commit", "-q", "-m", "initial")
        git(src, "push", "-q", template, "HEAD:refs/heads/main")
        git(template, "symbolic-ref", "HEAD", "refs/heads/main")
    lines = []
    for i in range(n):
        origin = os.path.join(work, "origins", f"r{i:04}.git")
        if not os.path.exists(origin):
            shutil.copytree(template, origin)
        lines.append(f"  - url: {origin}")
    return lines


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def run(name, lines, c):
    """One fleet: wall time, CPU (user + system, hone and every process it waited for), peaks."""
    ws = os.path.join(work, f"ws-{name}")
    shutil.rmtree(ws, ignore_errors=True)
    fleet = os.path.join(work, f"fleet-{name}.yaml")
    open(fleet, "w").write("version: 1\njob: job.yaml\nrepos:\n" + "\n".join(lines)
                           + f"\nconcurrency: {c}\nworkspace: ws-{name}\n")
    load0 = loadavg()
    err = open(os.path.join(work, f"stderr-{name}.txt"), "w")
    t0 = time.time()
    p = subprocess.Popen([hone, "fleet", fleet, "--dry-run"], stdout=subprocess.PIPE, stderr=err,
                         env={**os.environ, "RUST_LOG": "hone=warn,hone::fleet=debug"})
    peak = {"rss": 0, "fds": 0, "threads": 0}
    while p.poll() is None:
        try:
            for line in open(f"/proc/{p.pid}/status"):
                if line.startswith("VmHWM:"):
                    peak["rss"] = max(peak["rss"], int(line.split()[1]))
                if line.startswith("Threads:"):
                    peak["threads"] = max(peak["threads"], int(line.split()[1]))
            peak["fds"] = max(peak["fds"], len(os.listdir(f"/proc/{p.pid}/fd")))
        except OSError:
            pass
        time.sleep(0.05)
    wall = time.time() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = p.stdout.read().decode().strip()
    return {"c": c, "repos": len(lines), "wall": wall, "out": out, "load": f"{load0} → {loadavg()}",
            "cpu": ru.ru_utime + ru.ru_stime, **peak}


lines = origins()
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
sock.close()
model = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "mock_model.py"), str(port), str(delay)])
time.sleep(0.5)
open(os.path.join(work, "job.yaml"), "w").write(
    "version: 1\nname: bench\ntask: Make check.sh pass.\n"
    f"model: {{ provider: openai-compatible, name: mock, base_url: 'http://127.0.0.1:{port}/v1', stream: false }}\n"
    "verify:\n  - { name: check, run: 'sh check.sh', timeout: 30s }\n"
    "limits: { max_fix_attempts: 0 }\nplan: false\ncontext: { repo_map_tokens: 0 }\n")

rows = []
cpu_before = sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2])  # not the set-up's git
try:
    if a.sample:
        r = run("sample", lines[:a.sample], 1)
        r["cpu"], cpu_before = r["cpu"] - cpu_before, r["cpu"]
        rows.append(r)
    for c in a.concs:
        r = run(f"c{c}", lines, c)
        r["cpu"], cpu_before = r["cpu"] - cpu_before, r["cpu"]
        rows.append(r)
finally:
    model.kill()

serial_per_repo = rows[0]["wall"] / rows[0]["repos"]
how = f"{rows[0]['repos']} repositories at concurrency 1" if a.sample or rows[0]["c"] != 1 else "all at concurrency 1"
print(f"{n} repositories, model delay {delay:.2f}s per request (2 requests per repository); serial time per "
      f"repository {serial_per_repo:.2f} s, measured on {how} in this run\n")
print("| repositories | concurrency | wall time | ideal (serial ÷ concurrency) | wall ÷ ideal | CPU (user+sys) | "
      "CPU per repository | peak RSS | peak open fds | peak threads | load average (1 min, before → after) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    ideal = serial_per_repo * r["repos"] / r["c"]
    print(f"| {r['repos']} | {r['c']} | {r['wall']:.1f} s | {ideal:.1f} s | {r['wall'] / ideal:.2f} | {r['cpu']:.1f} s | "
          f"{1000 * r['cpu'] / r['repos']:.0f} ms | {r['rss'] / 1024:.0f} MiB | {r['fds']} | {r['threads']} | {r['load']} |")
for r in rows:
    print(f"\nconcurrency {r['c']} ({r['repos']} repositories): {r['out']}")
