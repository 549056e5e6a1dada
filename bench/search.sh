#!/usr/bin/env bash
# The grep and glob_file_search tools against ripgrep (issue 14, item 2), on the large tree of
# bench/first_request.py (a git repository of the cargo registry's sources, >= 20,000 files;
# built here when missing). Prints the Markdown table for BENCHMARKS.md ("Search"): hone and rg
# take turns in the same run, and each row gives hone's median over rg's, so a slip shows
# whatever the machine's load; then grep's largest ratio. With LIMIT, a grep ratio above it
# fails the script (medians on a busy 2-core machine wander by about 0.1).
#
#   bench/search.sh [RUNS] [RG] [LIMIT]     (defaults: 5 runs, the `rg` on PATH, no limit)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
rg="${2:-rg}"
limit="${3:-}"
command -v "$rg" >/dev/null || { echo "ripgrep ($rg) is not installed: cargo install ripgrep" >&2; exit 1; }
tree=target/bench/large
if [ ! -d "$tree/.git" ]; then
  python3 -c 'import sys; sys.path.insert(0, "bench"); import first_request; first_request.large_repo(20000)'
fi
echo "files: $(git -C "$tree" ls-files | wc -l), $(du -sh --exclude=.git "$tree" | cut -f1); $("$rg" --version | head -1); $(nproc) cores" >&2
cargo bench --quiet --bench search -- "$tree" "$runs" "$rg" ${limit:+"$limit"}
