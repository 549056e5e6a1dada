#!/usr/bin/env python3
"""hone's own overhead on a 20-turn run, for two builds side by side (issue 14: "keep every other
figure at least where it is").

Each build runs the same job against the same zero-latency mock (bench/prompt_cache.py's: a tool
call on every turn over the quickstart repository, OpenAI dialect), RUNS times, interleaved. It
reports medians of: wall time per turn (the mock answers at once, so this is hone's own time,
its tools and the jail included), peak RSS of hone's process tree (the largest process), and
bytes per request.

Usage: bench/overhead.py --reference OLD_HONE [--hone target/release/hone] [--runs 5]
"""
import argparse
import json
import resource
import statistics
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prompt_cache  # noqa: E402


def one(hone, port, turns):
    """(ms per turn, peak RSS in MB, bytes per request) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    bodies = prompt_cache.run(hone, "openai", port, turns)
    wall = (time.monotonic() - start) * 1000
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    size = statistics.mean(len(json.dumps(b)) for b in bodies)
    return wall / len(bodies), max(rss, before) / 1024, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", default=str(prompt_cache.ROOT / "target" / "release" / "hone"))
    ap.add_argument("--reference", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--turns", type=int, default=20)
    a = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), prompt_cache.Mock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    results = {a.reference: [], a.hone: []}
    for _ in range(a.runs):
        for h in (a.reference, a.hone):
            results[h].append(one(h, port, a.turns))
    # ru_maxrss of RUSAGE_CHILDREN only grows: each build's peak is measured in its own process.
    print("| build | ms per turn | peak RSS | bytes per request |")
    print("|---|---|---|---|")
    for label, h in (("reference", a.reference), ("this build", a.hone)):
        rss = subprocess.run([sys.executable, __file__, "--rss-only", h, str(a.turns)],
                             stdout=subprocess.PIPE, text=True).stdout.strip()
        per_turn = statistics.median(r[0] for r in results[h])
        size = statistics.median(r[2] for r in results[h])
        print(f"| {label} (`{h}`) | {per_turn:.1f} | {rss} MB | {size / 1024:.1f} KB |")
    server.shutdown()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--rss-only":
        # A process of its own, so that the peak is this build's alone.
        srv = ThreadingHTTPServer(("127.0.0.1", 0), prompt_cache.Mock)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        print(f"{one(sys.argv[2], srv.server_address[1], int(sys.argv[3]))[1]:.1f}")
        srv.shutdown()
    else:
        main()
