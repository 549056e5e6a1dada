#!/usr/bin/env python3
"""`hone fleet prs status` over N PRs against a GitHub stand-in (this script, a threaded HTTP
server on 127.0.0.1) that answers with GitHub's rate-limit headers (5,000 an hour, used and
remaining counted) after LATENCY seconds, and counts requests. Half the PRs are open, 40 %
merged, 10 % closed. Prints requests made and wall time against the minimum REST allows for
that information, and the GraphQL lower bound. Usage:
prs_status.py HONE_BIN WORKDIR N LATENCY CONC
"""
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

hone, work, n, latency, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
TOKEN = "ghp_bench_0123456789"
lock = threading.Lock()
count = {"n": 0}
RESET = int(time.time()) + 3600


def kind(i):
    return "merged" if i % 10 < 4 else "closed" if i % 10 == 4 else "open"


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        with lock:
            count["n"] += 1
            used = count["n"]
        time.sleep(latency)
        if self.headers.get("authorization") != f"Bearer {TOKEN}":
            return self.send(401, {"message": "Bad credentials"}, used)
        parts = self.path.split("?")[0].strip("/").split("/")
        repo = parts[2]
        i = int(repo[1:])
        rest = parts[3:]
        if rest[0] == "pulls" and len(rest) == 2:
            k = kind(i)
            body = {"number": i, "html_url": f"https://github.example/acme/{repo}/pull/{i}", "node_id": f"PR_{i}",
                    "state": "open" if k == "open" else "closed", "merged": k == "merged", "draft": False,
                    "mergeable": True, "mergeable_state": "clean", "created_at": "2026-01-01T00:00:00Z",
                    "head": {"ref": "hone/bench", "sha": f"{i:040}", "repo": {"full_name": f"acme/{repo}"}},
                    "base": {"ref": "main", "repo": {"full_name": f"acme/{repo}"}}}
        elif rest[-1] == "check-runs":
            body = {"total_count": 1, "check_runs": [{"status": "completed", "conclusion": "success"}]}
        elif rest[-1] == "status":
            body = {"state": "success", "total_count": 1, "statuses": [{"state": "success"}]}
        elif rest[-1] == "reviews":
            body = [{"user": {"login": "r"}, "state": "APPROVED"}]
        elif rest[0] == "rules":
            body = []
        else:
            return self.send(404, {"message": "Not Found"}, used)
        self.send(200, body, used)

    def send(self, status, body, used):
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in [("content-type", "application/json"), ("content-length", str(len(data))),
                     ("x-ratelimit-limit", "5000"), ("x-ratelimit-remaining", str(max(0, 5000 - used))),
                     ("x-ratelimit-used", str(used)), ("x-ratelimit-reset", str(RESET)),
                     ("x-ratelimit-resource", "core")]:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


os.makedirs(os.path.join(work, "out"), exist_ok=True)
open(os.path.join(work, "job.yaml"), "w").write(
    "version: 1\nname: bench\ntask: x\nmodel: { provider: script, script: script.yaml }\n"
    "verify:\n  - { name: check, run: \"true\" }\nplan: false\n")
open(os.path.join(work, "script.yaml"), "w").write("turns: []\n")
repos = [f"r{i:04}" for i in range(n)]
open(os.path.join(work, "fleet.yaml"), "w").write(
    "version: 1\njob: job.yaml\nworkspace: ws\nout: out\nrepos:\n" +
    "".join(f"  - url: https://github.com/acme/{r}\n" for r in repos))
results = [{"id": f"acme__{r}", "source": f"https://github.com/acme/{r}", "status": "pr_created", "code": None,
            "error": None, "pr_url": None, "pr_number": int(r[1:]), "pr_forge": "github", "branch": "hone/bench",
            "duration_ms": 1, "tokens": 0, "report_dir": "x", "job_hash": "h"} for r in repos]
json.dump({"schema_version": 1, "job": "bench", "job_hash": "h", "started_at": "t", "duration_ms": 1, "exit_code": 0,
           "counts": {}, "repos": results}, open(os.path.join(work, "out", "fleet.json"), "w"))

server = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=server.serve_forever, daemon=True).start()
env = dict(os.environ, GITHUB_TOKEN=TOKEN, GITHUB_API_URL=f"http://127.0.0.1:{server.server_port}")
for k in ["GITHUB_APP_ID", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]:
    env.pop(k, None)
start = time.monotonic()
p = subprocess.run([hone, "-q", "fleet", "prs", "status", os.path.join(work, "fleet.yaml"), "--concurrency", str(conc)],
                   env=env, capture_output=True, text=True)
wall = time.monotonic() - start
report = json.load(open(os.path.join(work, "out", "prs-status.json")))
opened = sum(1 for i in range(n) if kind(i) == "open")
minimum = (n - opened) + 5 * opened
# Critical path: a merged or closed PR is one round trip; an open one two (the PR, then its
# checks, statuses, reviews and rules at once); `conc` PRs at a time.
ideal = ((n - opened) * latency + opened * 2 * latency) / conc
print(f"exit {p.returncode}; {p.stdout.strip()}")
print("| PRs | open | concurrency | latency | requests (hone) | requests (server) | REST minimum | GraphQL lower bound | wall time | ideal wall time |")
print("|---|---|---|---|---|---|---|---|---|---|")
print(f"| {n} | {opened} | {conc} | {latency * 1000:.0f} ms | {report['requests']} | {count['n']} | {minimum} | "
      f"{-(-n // 50)} (50 PRs a query) | {wall:.2f} s | {ideal:.2f} s |")
