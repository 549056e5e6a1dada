#!/usr/bin/env bash
# Fleet benchmark: 100 local bare repositories, a mock model answering every request after a
# fixed delay, concurrency 1, 4 and 16. Prints the table for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
work="${BENCH_DIR:-$(mktemp -d)}"
python3 bench/fleet_bench.py "$PWD/target/release/hone" "$work" "${REPOS:-100}" "${DELAY:-0.25}" 1 4 16
