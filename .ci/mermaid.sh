#!/usr/bin/env bash
# Install Mermaid's own parser for the tests (mermaid, with jsdom for the DOM it expects and
# marked to find the blocks; pinned) into DIR, default target/test-tools/mermaid, where the tests
# look when HONE_TEST_MERMAID is not set. Needs Node.js 20 or newer and npm (the npm registry).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-target/test-tools/mermaid}"
mkdir -p "$dir"
(cd "$dir" && npm install --silent --no-audit --no-fund --ignore-scripts \
  mermaid@11.12.2 jsdom@26.1.0 marked@16.4.2 >/dev/null)
# Readable by every user: .ci/run also runs the tests as uid 65534.
chmod -R a+rX "$dir"
echo "$dir"
