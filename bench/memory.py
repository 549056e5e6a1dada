#!/usr/bin/env python3
"""What memory across runs saves (issue 29): a task whose first attempt fails on a learnable fact.

The repository's tests run with `make test`, which fails unless `FIXTURES=1` is given (its error
says so). The job's check is `sh ci.sh`, a script that passes the flag, so the fact is in no
prompt hone writes: only the memory can carry it. The task is to fix a bug that the tests catch. The model is a scripted stand-in in this
process that acts on what its context says, as a careful model would:

  - if a user message (never the system prompt, never a tool result) tells it that
    `make test FIXTURES=1` passed or failed in an earlier run, it runs that command first;
  - otherwise it runs `make test`, reads the failure, and runs `make test FIXTURES=1`;
  - then it fixes the bug, runs the working command again, and finishes.

Each request's usage is counted from the request's size (4 bytes a token), as a provider would
count its prompt. Two pairs of runs on a fresh clone of the same origin each time: with memory
(the second run gets the first's memory) and without (`--no-memory`). Prints a Markdown table:
turns, prompt and completion tokens of each run, and the second run against the first.

Usage: bench/memory.py [--hone target/release/hone]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGGED = "make test FIXTURES=1"
MAKEFILE = """test:
\t@test "$(FIXTURES)" = 1 || { echo "error: the fixtures are not loaded: run with FIXTURES=1"; exit 2; }
\t@grep -q 'return a + b' calc.py || { echo "FAIL: add(2, 2) != 4"; exit 1; }
\t@echo ok
"""


def said_in_user_messages(body, text):
    return any(m.get("role") == "user" and text in (m.get("content") or "") for m in body["messages"])


def next_move(body):
    """The scripted model's next call, from what the conversation holds so far."""
    remembered = said_in_user_messages(body, FLAGGED)
    calls = [c for m in body["messages"] if m.get("role") == "assistant" for c in (m.get("tool_calls") or [])]
    ran = [json.loads(c["function"]["arguments"]).get("command") for c in calls]
    wrote = any(c["function"]["name"] == "write_file" for c in calls)
    if not ran:
        return ("run_cmd", {"command": FLAGGED if remembered else "make test"})
    if FLAGGED not in ran:
        return ("run_cmd", {"command": FLAGGED})
    if not wrote:
        return ("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})
    if ran.count(FLAGGED) < 2:
        return ("run_cmd", {"command": FLAGGED})
    return None


class Mock(BaseHTTPRequestHandler):
    requests = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.loads(raw)
        Mock.requests.append(body)
        n = len(Mock.requests)
        move = next_move(body)
        if move is None:
            msg = {"role": "assistant", "content": "Fixed add(); the tests pass with FIXTURES=1."}
        else:
            name, args = move
            msg = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}
        completion = len(json.dumps(msg)) // 4
        out = {"choices": [{"index": 0, "message": msg, "finish_reason": "stop" if move is None else "tool_calls"}],
               "usage": {"prompt_tokens": len(raw) // 4, "completion_tokens": completion,
                         "total_tokens": len(raw) // 4 + completion}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL)


def origin(work):
    src = work / "src"
    src.mkdir()
    (src / "Makefile").write_text(MAKEFILE)
    (src / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    # The job's check runs the tests through a script, so the flag is in no prompt hone writes.
    (src / "ci.sh").write_text("make test FIXTURES=1\n")
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "init")
    bare = work / "origin.git"
    git(work, "clone", "-q", "--bare", str(src), str(bare))
    return bare


def run_once(hone, work, bare, port, memory_dir, label, extra):
    repo = work / f"clone-{label}"
    git(work, "clone", "-q", str(bare), str(repo))
    spec = work / f"{label}.yaml"
    spec.write_text(
        "version: 1\nname: memory-bench\ntask: add(2, 2) returns 0; fix it.\n"
        f"model: {{ provider: openai-compatible, name: mock, base_url: 'http://127.0.0.1:{port}/v1', "
        "api_key_env: BENCH_KEY, stream: false }\n"
        "verify:\n  - { name: tests, run: 'sh ci.sh' }\n"
        "plan: false\ngit: { push: false }\nlimits: { max_turns: 20 }\n")
    policy = work / "policy.yaml"
    policy.write_text("version: 1\ncommands:\n  default: allow\n")
    spec.write_text(spec.read_text() + f"policy: {policy}\n")
    env = dict(os.environ, BENCH_KEY="bench-key", HONE_MEMORY_DIR=str(memory_dir))
    before = len(Mock.requests)
    out = subprocess.run([hone, "run", str(spec), "--repo", str(repo), "--report-dir", str(work / f"r-{label}"),
                          "--quiet", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    report = json.loads((work / f"r-{label}" / "report.json").read_text())
    if report["status"] != "success":
        sys.exit(f"{label}: {report['status']} (exit {out.returncode}):\n{out.stderr}")
    used = len(report.get("memory", {}).get("used", []))
    return {"turns": report["turns"], "prompt": report["usage"]["prompt_tokens"],
            "completion": report["usage"]["completion_tokens"], "requests": len(Mock.requests) - before,
            "used": used}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", default=str(ROOT / "target" / "release" / "hone"))
    ap.add_argument("--show", action="store_true", help="print the second run's first user message (with memory)")
    a = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    work = Path(tempfile.mkdtemp(prefix="hone-memory-bench-"))
    bare = origin(work)
    rows = []
    for mode, label, extra in (("with memory", "mem", []), ("without memory", "nomem", ["--no-memory"])):
        memory_dir = work / f"memory-{label}"
        first = run_once(a.hone, work, bare, port, memory_dir, f"{label}-1", extra)
        second = run_once(a.hone, work, bare, port, memory_dir, f"{label}-2", extra)
        rows.append((mode, first, second))
        if a.show and label == "mem":
            body = Mock.requests[-second["requests"]]
            print(next(m["content"] for m in body["messages"] if m["role"] == "user"), file=sys.stderr)
    print("| runs | run | turns | prompt tokens | completion tokens | memory entries given |")
    print("|---|---|---|---|---|---|")
    for mode, first, second in rows:
        for name, r in (("first", first), ("second", second)):
            print(f"| {mode} | {name} | {r['turns']} | {r['prompt']} | {r['completion']} | {r['used']} |")
    print()
    print("| runs | second ÷ first: turns | prompt tokens | completion tokens |")
    print("|---|---|---|---|")
    for mode, first, second in rows:
        ratio = lambda k: f"{second[k] / first[k]:.2f}"
        print(f"| {mode} | {ratio('turns')} | {ratio('prompt')} | {ratio('completion')} |")
    server.shutdown()
    subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
