#!/usr/bin/env bash
# Install Mermaid's own parser for the tests (mermaid, with jsdom for the DOM it expects and
# marked to find the blocks; pinned) into DIR, default target/test-tools/mermaid, where the tests
# look when HONE_TEST_MERMAID is not set. Needs Node.js 18 or newer and npm (the npm registry).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-target/test-tools/mermaid}"
mkdir -p "$dir"
# Bounded: npm retries a registry it cannot reach (or whose certificate it does not trust) for
# a long time without a word; past 10 minutes this stops and says where to look.
if ! (cd "$dir" && timeout 600 npm install --silent --no-audit --no-fund --ignore-scripts \
  --fetch-timeout=60000 --fetch-retries=2 mermaid@11.12.2 jsdom@26.1.0 marked@16.4.2 >/dev/null); then
  echo ".ci/mermaid.sh: npm could not install Mermaid's parser from $(npm config get registry) within 10 minutes" >&2
  echo ".ci/mermaid.sh: behind a proxy with its own CA, point npm at it: npm config set cafile /path/to/ca.pem" >&2
  exit 1
fi
# Readable by every user: .ci/run also runs the tests as uid 65534.
chmod -R a+rX "$dir"
echo "$dir"
