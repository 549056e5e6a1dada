#!/usr/bin/env python3
"""Time from process start to hone's first model request, on a small and a large repository.

For each repository it runs `hone run` N times per variant against a local mock model (an
OpenAI-compatible server in this process that records when the first request arrives and
answers "done"), with one check (`true`), and reports the median:

  no map     context.repo_map_tokens: 0 (the reference: everything but the map)
  cold map   the default map, with its cache (.git/hone/repomap.json) removed before each run
  warm map   the default map, with the cache a previous run left

The large repository is a git repository made from the cargo registry's sources (at least 20,000
files; built once under target/bench/large). Usage:

  bench/first_request.py [--runs 3] [--hone target/release/hone] [--min-files 20000]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "bench"


class Mock(BaseHTTPRequestHandler):
    first = None  # time.monotonic() of the first request of the current run

    def log_message(self, *args):
        pass

    def do_POST(self):
        if Mock.first is None:
            Mock.first = time.monotonic()
        self.rfile.read(int(self.headers["Content-Length"]))
        out = json.dumps({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Nothing to change."},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, stdout=subprocess.DEVNULL)


def commit_all(repo):
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "init")


def small_repo():
    repo = WORK / "small"
    if not (repo / ".git").exists():
        shutil.rmtree(repo, ignore_errors=True)
        shutil.copytree(ROOT / "examples" / "quickstart" / "repo", repo)
        commit_all(repo)
    return repo


def large_repo(min_files):
    repo = WORK / "large"
    if (repo / ".git").exists():
        return repo
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    registry = Path.home() / ".cargo" / "registry" / "src"
    count = 0
    for index in sorted(registry.iterdir()):
        for crate in sorted(index.iterdir()):
            if count >= min_files:
                break
            dest = repo / crate.name
            shutil.copytree(crate, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", ".gitignore"))
            count += sum(len(files) for _, _, files in os.walk(dest))
    if count < min_files:
        sys.exit(f"the cargo registry holds only {count} files; need {min_files}")
    commit_all(repo)
    return repo


def spec(repo, port, map_tokens):
    text = (
        "version: 1\n"
        "name: first-request\n"
        "task: Look around, then stop.\n"
        f"model: {{ provider: openai-compatible, name: mock, base_url: 'http://127.0.0.1:{port}/v1', stream: false }}\n"
        "verify:\n  - { name: check, run: 'true' }\n"
        f"context: {{ repo_map_tokens: {map_tokens} }}\n"
        "plan: false\n"
        "git: { commit: false }\n"
    )
    path = WORK / f"spec-{repo.name}-{map_tokens}.yaml"
    path.write_text(text)
    return path


def one_run(hone, repo, spec_path):
    Mock.first = None
    start = time.monotonic()
    out = subprocess.run([str(hone), "run", str(spec_path), "--repo", str(repo), "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if Mock.first is None:
        sys.exit(f"hone sent no request (exit {out.returncode}):\n{out.stderr}")
    return (Mock.first - start) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hone", default=str(ROOT / "target" / "release" / "hone"))
    ap.add_argument("--min-files", type=int, default=20000)
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    print(f"{'repository':<10} {'files':>6} {'no map':>9} {'cold map':>9} {'warm map':>9}  (ms to the first request, median of {args.runs})")
    for repo in [small_repo(), large_repo(args.min_files)]:
        files = int(subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, text=True).stdout.count("\n"))
        cache = repo / ".git" / "hone" / "repomap.json"
        no_map = spec(repo, port, 0)
        with_map = spec(repo, port, 1500)
        one_run(args.hone, repo, no_map)  # warm the page cache for every variant alike
        times = {"no": [], "cold": [], "warm": []}
        for _ in range(args.runs):
            times["no"].append(one_run(args.hone, repo, no_map))
            cache.unlink(missing_ok=True)
            times["cold"].append(one_run(args.hone, repo, with_map))
            times["warm"].append(one_run(args.hone, repo, with_map))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{repo.name:<10} {files:>6} {med['no']:>9.0f} {med['cold']:>9.0f} {med['warm']:>9.0f}")


if __name__ == "__main__":
    main()
