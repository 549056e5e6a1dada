#!/usr/bin/env python3
"""What hone's egress proxy costs a command (issue 23), against the same command in a jail with
the host's network, measured in the same run.

A local HTTP server (in this script) serves a 256 MiB file and a 1 KiB one. A scripted model
(`provider: script`, no network) runs one command in the jail that fetches them with raw sockets:
  bulk       the big file once (MB/s)
  requests   the small file 300 times, a new connection each (ms per request)
  tunnel     the big file once through CONNECT (the way TLS goes), (MB/s)
once with `network: true` (straight to 127.0.0.1, the reference) and once with
`network: { allow: ["127.0.0.1:PORT"] }` (through the proxy), ROUNDS times each, taking turns;
medians. The time of a whole run without network rules is bench/overhead.py's.

    bench/egress.py [HONE] [ROUNDS]     (default: target/release/hone 5)
"""

import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = 256 << 20

CLIENT = r'''
import os, socket, time
port = int(os.environ["BENCH_PORT"])
proxy = os.environ.get("HTTP_PROXY")
def fetch(path, tunnel=False):
    if proxy:
        host, pport = proxy.split("//")[1].rsplit(":", 1)
        s = socket.create_connection((host, int(pport)))
        if tunnel:
            s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(1)
            target = path
        else:
            target = f"http://127.0.0.1:{port}{path}"
    else:
        s = socket.create_connection(("127.0.0.1", port))
        target = path
    s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    n = 0
    buf = bytearray(1 << 20)
    while True:
        k = s.recv_into(buf)
        if not k:
            break
        n += k
    s.close()
    return n
t = time.perf_counter(); n = fetch("/big"); bulk = n / (time.perf_counter() - t) / 1e6
t = time.perf_counter()
for _ in range(300):
    fetch("/small")
req = (time.perf_counter() - t) / 300 * 1000
t = time.perf_counter(); n = fetch("/big", tunnel=True); tun = n / (time.perf_counter() - t) / 1e6
print(f"RESULT {bulk:.1f} {req:.3f} {tun:.1f} {n}")
'''


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    big = b"x" * BIG

    def do_GET(self):
        body = self.big if self.path == "/big" else b"y" * 1024
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def run(hone: Path, port: int, network: str) -> tuple:
    work = Path(tempfile.mkdtemp(prefix="hone-egress-"))
    repo = work / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "client.py").write_text(CLIENT)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "init"], check=True)
    script = {"turns": [
        {"content": "", "tool_calls": [{"name": "run_cmd", "arguments": {"command": "python3 client.py"}}]},
        {"content": "Done."},
    ]}
    (work / "script.json").write_text(json.dumps(script))
    (work / "policy.yaml").write_text(
        f"version: 1\ncommands:\n  default: allow\nnetwork: {network}\nenv:\n  pass: [PATH, HOME, BENCH_PORT]\n")
    (work / "job.yaml").write_text(
        f"version: 1\nname: egress\ntask: t\n"
        f"model: {{ provider: script, name: s, script: {work / 'script.json'} }}\n"
        f"repo: {{ path: {repo} }}\nreport: {{ dir: {work / 'reports'} }}\npolicy: {work / 'policy.yaml'}\n"
        "verify:\n  - { name: check, run: \"true\", timeout: 60s }\n"
        "limits: { max_turns: 5, max_wall_time: 10m }\nplan: false\ntools: { cmd_timeout: 300s }\n")
    env = dict(os.environ, BENCH_PORT=str(port))
    subprocess.run([str(hone), "run", str(work / "job.yaml")], capture_output=True, text=True, env=env, timeout=900)
    said = (work / "reports/transcript.jsonl").read_text() if (work / "reports/transcript.jsonl").exists() else ""
    subprocess.run(["rm", "-rf", str(work)])
    for line in said.splitlines():
        entry = json.loads(line)
        for text in [entry.get("content", "")]:
            if "RESULT " in text:
                vals = text.split("RESULT ")[1].split()
                return float(vals[0]), float(vals[1]), float(vals[2])
    raise SystemExit(f"no result from the run with network {network}: {said[-2000:]}")


def main() -> None:
    hone = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target/release/hone"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    modes = {"network: true (reference)": "true", "allow-list (proxy)": f"{{ allow: [\"127.0.0.1:{port}\"] }}"}
    got = {m: [] for m in modes}
    for _ in range(rounds):
        for label, net in modes.items():
            got[label].append(run(hone, port, net))
    print("| network | bulk MB/s | ms per request (new connection) | CONNECT tunnel MB/s |")
    print("|---|---|---|---|")
    med = {}
    for label in modes:
        cols = list(zip(*got[label]))
        med[label] = [statistics.median(c) for c in cols]
        print(f"| {label} | {med[label][0]:.0f} | {med[label][1]:.3f} | {med[label][2]:.0f} |")
    ref, prox = med["network: true (reference)"], med["allow-list (proxy)"]
    print(f"\nproxy ÷ reference: bulk {prox[0] / ref[0]:.2f}, per request {prox[1] / ref[1]:.2f}, "
          f"tunnel {prox[2] / ref[2]:.2f}")


if __name__ == "__main__":
    main()
