#!/usr/bin/env bash
# Fleet benchmark with a release build and the mock model (bench/mock_model.py).
#   bench/fleet.sh           100 local repositories, 0.25 s per model request, concurrency 1, 4, 16
#   SCALE=1 bench/fleet.sh   1,000 repositories, 1 s per request, concurrency 8 and 32, the serial
#                            time per repository measured on 24 of them at concurrency 1
# Prints the table for BENCHMARKS.md. BENCH_DIR keeps the repositories between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/hone"
work="${BENCH_DIR:-$(mktemp -d)}"
if [ -n "${SCALE:-}" ]; then
  python3 bench/fleet_bench.py "$bin" "$work" "${REPOS:-1000}" "${DELAY:-1}" 8 32 --sample "${SAMPLE:-24}"
else
  python3 bench/fleet_bench.py "$bin" "$work" "${REPOS:-100}" "${DELAY:-0.25}" 1 4 16
fi
