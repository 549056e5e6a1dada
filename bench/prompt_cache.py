#!/usr/bin/env python3
"""The share of each prompt the provider can read from its cache, per provider (issue 14, item 3).

One 20-turn run per dialect (Anthropic Messages, OpenAI Chat Completions) of `hone run` against
a mock model in this process that answers with a tool call on every turn (read_file, list_dir,
grep over the small repository) and then with a final text. The mock records every request
body. For each request from the third on it computes:

  anthropic  the cacheable share: the bytes of the longest prefix that ends at a block the
             previous request marked with `cache_control` and is unchanged since, over the
             prompt's bytes (what Anthropic reads from its cache). The reference, from the same
             requests: the share of tools and system prompt alone, which is what marking only
             those (hone before this change) made cacheable.
  openai     the share of the prompt that is the previous request's prompt, unchanged (OpenAI
             caches such prefixes on its own, for requests that reach the same cache, which a
             stable `prompt_cache_key` makes likely); and whether the key was the same on every
             request.

Prints a Markdown table. Usage: bench/prompt_cache.py [--hone target/release/hone] [--turns 20]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS = [
    ("read_file", {"path": "calc.py"}),
    ("list_dir", {"path": "."}),
    ("grep", {"pattern": "def ", "path": "."}),
    ("read_file", {"path": "test_calc.py"}),
    ("glob_file_search", {"pattern": "*.py"}),
]


class Mock(BaseHTTPRequestHandler):
    bodies = []
    turns = 20

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Mock.bodies.append(body)
        n = len(Mock.bodies)
        name, args = CALLS[(n - 1) % len(CALLS)]
        last = n >= Mock.turns
        if self.path.endswith("/messages"):
            content = [{"type": "text", "text": "Nothing to change."}] if last else [
                {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args}]
            out = {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "mock",
                   "content": content, "stop_reason": "end_turn" if last else "tool_use",
                   "usage": {"input_tokens": 10, "output_tokens": 5}}
        else:
            msg = {"role": "assistant", "content": "Nothing to change."} if last else {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": f"call_{n}", "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)}}]}
            out = {"choices": [{"index": 0, "message": msg, "finish_reason": "stop" if last else "tool_calls"}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def unmarked(v):
    if isinstance(v, dict):
        return {k: unmarked(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [unmarked(x) for x in v]
    return v


def units(body):
    """The prompt in the order the provider reads it: (text, marked) per tool, system block and
    message block (Anthropic) or message (OpenAI)."""
    out = []
    for t in body.get("tools") or []:
        out.append((json.dumps(unmarked(t), sort_keys=True), "cache_control" in t))
    system = body.get("system")
    for s in system if isinstance(system, list) else []:
        out.append((json.dumps(unmarked(s), sort_keys=True), "cache_control" in s))
    for m in body.get("messages") or []:
        if isinstance(m.get("content"), list):
            for b in m["content"]:
                out.append((m["role"] + ":" + json.dumps(unmarked(b), sort_keys=True), "cache_control" in b))
        else:
            out.append((json.dumps(unmarked(m), sort_keys=True), False))
    return out


def size(us):
    return sum(len(u[0]) for u in us)


def marked_shares(bodies):
    """The share of each prompt up to its last `cache_control` block: what it asks to cache."""
    out = []
    for body in bodies:
        us = units(body)
        last = max((k for k, u in enumerate(us) if u[1]), default=-1)
        out.append(size(us[:last + 1]) / size(us))
    return out


def anthropic_shares(bodies):
    hone, reference = [], []
    for prev, now in zip(bodies[1:], bodies[2:]):
        p, n = units(prev), units(now)
        best = 0
        for k, (text, marked) in enumerate(p):
            if marked and k < len(n) and [u[0] for u in n[:k + 1]] == [u[0] for u in p[:k + 1]]:
                best = size(n[:k + 1])
        hone.append(best / size(n))
        fixed = len(now.get("tools") or []) + len(now.get("system") or [])
        reference.append(size(n[:fixed]) / size(n))
    return hone, reference


def openai_shares(bodies):
    shares = []
    for prev, now in zip(bodies[1:], bodies[2:]):
        p, n = [u[0] for u in units(prev)], [u[0] for u in units(now)]
        k = 0
        while k < min(len(p), len(n)) and p[k] == n[k]:
            k += 1
        shares.append(sum(map(len, n[:k])) / sum(map(len, n)))
    keys = {b.get("prompt_cache_key") for b in bodies}
    return shares, keys


def run(hone, dialect, port, turns):
    Mock.bodies, Mock.turns = [], turns
    work = Path(tempfile.mkdtemp(prefix="hone-cache-bench-"))
    repo = work / "repo"
    subprocess.run(["cp", "-r", str(ROOT / "examples" / "quickstart" / "repo"), str(repo)], check=True)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    model = (f"{{ provider: anthropic, name: mock, base_url: 'http://127.0.0.1:{port}', api_key_env: BENCH_KEY, stream: false }}"
             if dialect == "anthropic" else
             f"{{ provider: openai, name: mock, base_url: 'http://127.0.0.1:{port}/v1', api_key_env: BENCH_KEY, stream: false }}")
    spec = work / "job.yaml"
    spec.write_text("version: 1\nname: cache-bench\ntask: Read the code, then stop.\n"
                    f"model: {model}\nverify:\n  - {{ name: check, run: 'true' }}\n"
                    f"plan: false\ngit: {{ commit: false }}\nlimits: {{ max_turns: {turns + 5} }}\n")
    env = dict(os.environ, BENCH_KEY="bench-key")
    out = subprocess.run([hone, "run", str(spec), "--repo", str(repo), "--quiet"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if len(Mock.bodies) < turns:
        sys.exit(f"{dialect}: hone made {len(Mock.bodies)} requests (exit {out.returncode}):\n{out.stderr}")
    subprocess.run(["rm", "-rf", str(work)])
    return list(Mock.bodies)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", default=str(ROOT / "target" / "release" / "hone"))
    ap.add_argument("--turns", type=int, default=20)
    a = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    pct = lambda x: f"{100 * x:.1f}%"
    print("| provider | requests | marked for caching, min | read from the cache, median (min), requests 3+ | reference, median (min) |")
    print("|---|---|---|---|---|")
    bodies = run(a.hone, "anthropic", port, a.turns)
    h, r = anthropic_shares(bodies)
    m = marked_shares(bodies)
    print(f"| Anthropic (`cache_control` on the newest block) | {len(bodies)} | {pct(min(m))} | {pct(statistics.median(h))} ({pct(min(h))}) "
          f"| tools and system only: {pct(statistics.median(r))} ({pct(min(r))}) |")
    bodies = run(a.hone, "openai", port, a.turns)
    s, keys = openai_shares(bodies)
    key = "one `prompt_cache_key` for the run" if len(keys) == 1 and None not in keys else f"keys: {keys}"
    print(f"| OpenAI (automatic; {key}) | {len(bodies)} | all (automatic) | {pct(statistics.median(s))} ({pct(min(s))}) | — |")
    server.shutdown()


if __name__ == "__main__":
    main()
