#!/usr/bin/env python3
"""How long hone waits before retrying a model request after a fault.

A local mock model answers the first request of each run with a fault, then with a final answer;
the time between the two requests' arrival is the retry latency. Faults: HTTP 500, HTTP 503 with
`Retry-After: 1` (the reference: the server's own wait, which hone must honour), a connection
closed without an answer, and a stream cut after its first chunk. Median of N runs each.

  bench/retry_latency.py [--runs 5] [--hone target/release/hone]
"""
import argparse
import json
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
ANSWER = json.dumps({
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Nothing to change."}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}).encode()


class Mock(BaseHTTPRequestHandler):
    fault = "500"
    arrivals = []
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        Mock.arrivals.append(time.monotonic())
        if len(Mock.arrivals) > 1:
            return self.reply(200, ANSWER)
        if Mock.fault == "500":
            return self.reply(500, b'{"error": {"message": "boom", "type": "server_error"}}')
        if Mock.fault == "503-retry-after-1s":
            return self.reply(503, b'{"error": {"message": "busy"}}', {"Retry-After": "1"})
        if Mock.fault == "connection-closed":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if Mock.fault == "cut-stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            chunk = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Noth"}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)

    def reply(self, status, body, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


def repo():
    path = WORK / "retry-repo"
    if not (path / ".git").exists():
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(ROOT / "examples" / "quickstart" / "repo", path)
        for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                     ["-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "init"]):
            subprocess.run(["git", "-C", str(path), *args], check=True)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hone", default=str(ROOT / "target" / "release" / "hone"))
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Mock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    target = repo()
    print(f"{'fault':<22} {'median ms':>9} {'min':>6} {'max':>6}  (first request -> retry, {args.runs} runs)")
    for fault in ["500", "503-retry-after-1s", "connection-closed", "cut-stream"]:
        stream = "true" if fault == "cut-stream" else "false"
        spec = WORK / f"retry-{fault}.yaml"
        spec.write_text(
            "version: 1\nname: retry\ntask: Stop.\n"
            f"model: {{ provider: openai-compatible, name: mock, base_url: 'http://127.0.0.1:{port}/v1', stream: {stream} }}\n"
            "verify:\n  - { name: check, run: 'true' }\n"
            "context: { repo_map_tokens: 0 }\nplan: false\ngit: { commit: false }\n")
        gaps = []
        for _ in range(args.runs):
            Mock.fault, Mock.arrivals = fault, []
            out = subprocess.run([args.hone, "run", str(spec), "--repo", str(target), "--quiet"],
                                 capture_output=True, text=True)
            if len(Mock.arrivals) < 2:
                sys.exit(f"{fault}: no retry (exit {out.returncode}):\n{out.stderr}")
            gaps.append((Mock.arrivals[1] - Mock.arrivals[0]) * 1000)
        print(f"{fault:<22} {statistics.median(gaps):>9.0f} {min(gaps):>6.0f} {max(gaps):>6.0f}")


if __name__ == "__main__":
    main()
