#!/usr/bin/env python3
"""Three parallel tries against one (issue 45): the wall time and peak memory of a job with
`--attempts 3` as ratios to the same job with `--attempts 1`, measured in the same run.

A local mock model (bench/mock_model.py) answers every request after a fixed latency (0.5 s by
default): a write_file call, then the final answer, so each try makes two requests and passes
its check. Both configurations run RUNS times, interleaved, each hone run in a process of its own
so that its peak RSS (ru_maxrss of the run's largest process: hone itself, which holds every
try) is its alone. Reports medians and the ratios.

  bench/attempts.py [--hone target/release/hone] [--runs 5] [--latency 0.5]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK = "grep -qx fixed status.txt\n"
JOB = """version: 1
name: bench-tries
task: Make check.sh pass.
model:
  provider: openai-compatible
  name: mock-model
  base_url: http://127.0.0.1:{port}/v1
  api_key_env: HONE_BENCH_KEY
  stream: false
verify:
  - {{ name: check, run: "sh check.sh", timeout: 30s }}
limits: {{ max_turns: 10, max_wall_time: 5m }}
plan: false
context: {{ repo_map_tokens: 0 }}
"""

# One hone run, in a process of its own: prints its wall time (s) and its peak RSS (KiB).
ONE = """
import resource, subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.monotonic() - t
if r.returncode != 0:
    sys.exit("hone failed: " + r.stderr.decode()[-2000:])
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_repo(root, port):
    repo = root / "repo"
    repo.mkdir()
    (repo / "status.txt").write_text("broken\n")
    (repo / "check.sh").write_text(CHECK)
    (repo / "job.yaml").write_text(JOB.format(port=port))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "add", "-A")
    git(repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "start")
    return repo


def one(hone, repo, memory, attempts):
    cmd = [sys.executable, "-c", ONE, str(hone), "run", "job.yaml", "--attempts", str(attempts), "--memory-dir", str(memory)]
    out = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env={**os.environ, "HONE_BENCH_KEY": "k"})
    if out.returncode != 0:
        sys.exit(out.stderr)
    wall, rss = out.stdout.split()
    report = json.loads((repo / ".hone" / "reports" / "report.json").read_text())
    if report["status"] != "success" or len(report.get("tries", [])) != (attempts if attempts > 1 else 0):
        sys.exit(f"unexpected run: {report['status']}, {len(report.get('tries', []))} tries")
    return float(wall), int(rss) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", default=str(ROOT / "target" / "release" / "hone"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.5)
    a = ap.parse_args()
    port = free_port()
    mock = subprocess.Popen([sys.executable, str(ROOT / "bench" / "mock_model.py"), str(port), str(a.latency)])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        with tempfile.TemporaryDirectory(prefix="hone-bench-tries-") as tmp:
            repo, memory = make_repo(Path(tmp), port), Path(tmp) / "memory"
            runs = {1: [], 3: []}
            for _ in range(a.runs):
                for n in (1, 3):
                    runs[n].append(one(a.hone, repo, memory, n))
    finally:
        mock.kill()
    med = {n: (statistics.median(w for w, _ in r), statistics.median(m for _, m in r)) for n, r in runs.items()}
    print(f"model latency {a.latency} s a request, 2 requests a try, {a.runs} runs each, medians")
    print("| tries | wall time | peak RSS |")
    print("|---|---|---|")
    for n in (1, 3):
        print(f"| {n} | {med[n][0]:.2f} s | {med[n][1]:.1f} MB |")
    print(f"| ratio 3:1 | {med[3][0] / med[1][0]:.2f}x | {med[3][1] / med[1][1]:.2f}x |")


if __name__ == "__main__":
    main()
