#!/usr/bin/env python3
"""Run `hone fleet` over N local repositories at several concurrencies, sampling peak RSS and
open file descriptors from /proc, and print a Markdown table. Usage:
fleet_bench.py HONE_BIN WORKDIR N DELAY CONC...
"""
import os
import socket
import subprocess
import sys
import time

hone, work, n, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
concs = [int(c) for c in sys.argv[5:]]


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


os.makedirs(work, exist_ok=True)
lines = []
for i in range(n):
    origin = os.path.join(work, "origins", f"r{i:03}.git")
    if not os.path.exists(origin):
        src = os.path.join(work, "src", f"r{i:03}")
        os.makedirs(src, exist_ok=True)
        os.makedirs(os.path.dirname(origin), exist_ok=True)
        git(work, "init", "-q", "--bare", origin)
        git(src, "init", "-q")
        open(os.path.join(src, "status.txt"), "w").write("broken\n")
        open(os.path.join(src, "check.sh"), "w").write("grep -qx fixed status.txt\n")
        git(src, "add", "-A")
        git(src, "commit", "-q", "-m", "initial")
        git(src, "push", "-q", origin, "HEAD:refs/heads/main")
        git(origin, "symbolic-ref", "HEAD", "refs/heads/main")
    lines.append(f"  - url: {origin}")

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
serial = None
try:
    for c in concs:
        ws = os.path.join(work, f"ws{c}")
        subprocess.run(["rm", "-rf", ws])
        open(os.path.join(work, f"fleet{c}.yaml"), "w").write(
            f"version: 1\njob: job.yaml\nrepos:\n" + "\n".join(lines) + f"\nconcurrency: {c}\nworkspace: ws{c}\n")
        t0 = time.time()
        p = subprocess.Popen([hone, "fleet", os.path.join(work, f"fleet{c}.yaml"), "--dry-run"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "RUST_LOG": "hone=warn"})
        peak_rss, peak_fds = 0, 0
        while p.poll() is None:
            try:
                for line in open(f"/proc/{p.pid}/status"):
                    if line.startswith("VmHWM:"):
                        peak_rss = max(peak_rss, int(line.split()[1]))
                peak_fds = max(peak_fds, len(os.listdir(f"/proc/{p.pid}/fd")))
            except OSError:
                pass
            time.sleep(0.05)
        wall = time.time() - t0
        out = p.stdout.read().decode().strip()
        if serial is None:
            serial = wall * c
        ideal = serial / c
        rows.append((c, wall, ideal, peak_rss / 1024, peak_fds, out))
finally:
    model.kill()

print(f"{n} repositories, model delay {delay:.2f}s per request (2 requests per repository)\n")
print("| concurrency | wall time | ideal (serial ÷ concurrency) | wall ÷ ideal | peak RSS | peak open fds |")
print("|---|---|---|---|---|---|")
for c, wall, ideal, rss, fds, _ in rows:
    print(f"| {c} | {wall:.1f} s | {ideal:.1f} s | {wall / ideal:.2f} | {rss:.0f} MiB | {fds} |")
for c, *_, out in rows:
    print(f"\nconcurrency {c}: {out}")
