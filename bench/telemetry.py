#!/usr/bin/env python3
"""What OpenTelemetry export costs per turn (issue 47): the same 20-turn run with export off and
with export on (traces and metrics over OTLP/HTTP to a local sink that answers at once), and,
with --reference, the same run by an older build (no telemetry at all), interleaved RUNS times.

The model is bench/prompt_cache.py's zero-latency mock (a tool call on every turn over the
quickstart repository), so the time is hone's own. It reports medians of hone's CPU time
(user + system of the process tree, from getrusage) per turn, and of wall time per turn, with
each configuration's ratio to the run with export off.

Usage: bench/telemetry.py [--hone target/release/hone] [--reference OLD_HONE] [--runs 7] [--turns 20]
"""
import argparse
import os
import resource
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prompt_cache  # noqa: E402


class Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that keeps nothing: 200 and an empty protobuf answer."""
    requests = 0
    spans_bytes = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n)
        Sink.requests += 1
        Sink.spans_bytes += len(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(hone, port, turns, env):
    """(CPU ms per turn, wall ms per turn) of one run with `env` added."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        cpu, start = cpu_children(), time.monotonic()
        bodies = prompt_cache.run(hone, "openai", port, turns)
        wall = (time.monotonic() - start) * 1000
        cpu = (cpu_children() - cpu) * 1000
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return cpu / len(bodies), wall / len(bodies)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", default=str(prompt_cache.ROOT / "target" / "release" / "hone"))
    ap.add_argument("--reference")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--turns", type=int, default=20)
    a = ap.parse_args()
    model = ThreadingHTTPServer(("127.0.0.1", 0), prompt_cache.Mock)
    sink = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    for s in (model, sink):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    port = model.server_address[1]
    endpoint = f"http://127.0.0.1:{sink.server_address[1]}"
    off = {"OTEL_SDK_DISABLED": "true"}
    on = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SDK_DISABLED": "false"}
    configs = [("export off", a.hone, off), ("export on", a.hone, on)]
    if a.reference:
        configs.insert(0, ("older build (no telemetry)", a.reference, off))
    results = {label: [] for label, _, _ in configs}
    for _ in range(a.runs):
        for label, hone, env in configs:
            results[label].append(one(hone, port, a.turns, env))
    base = statistics.median(r[0] for r in results["export off"])
    print(f"{a.runs} runs of {a.turns} turns each; the sink received {Sink.requests} requests "
          f"({Sink.spans_bytes / max(1, Sink.requests) / 1024:.1f} KiB each on average)\n")
    print("| configuration | CPU ms per turn | ÷ export off | wall ms per turn |")
    print("|---|---|---|---|")
    for label, _, _ in configs:
        cpu = statistics.median(r[0] for r in results[label])
        wall = statistics.median(r[1] for r in results[label])
        print(f"| {label} | {cpu:.1f} | {cpu / base:.3f} | {wall:.1f} |")
    for s in (model, sink):
        s.shutdown()


if __name__ == "__main__":
    main()
