#!/usr/bin/env bash
# Validate every Kubernetes manifest of examples/kubernetes/ against the API's schemas, offline:
# kubernetes-validate (PyPI) bundles the OpenAPI schemas of each Kubernetes release. Strict mode
# rejects unknown fields, so a misspelt or misplaced key fails too, not only a wrong type.
#
# Two versions: the newest the package bundles, and the oldest the example supports (1.33, the
# first with pod user namespaces and procMount on by default; see examples/kubernetes/README.md).
#
# Usage: .ci/validate-kubernetes.sh [FILE...]   (default: examples/kubernetes/*.yaml)
# Exits non-zero if any manifest is invalid.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned, so a new release of the package (and its schemas) cannot change the result unseen.
KUBERNETES_VALIDATE_VERSION="1.37.0"
# -k takes a Kubernetes version the package bundles; `kubernetes-validate --help` names its
# default, the newest.
KUBERNETES_VERSIONS=("1.37.0" "1.33.0")

if [ "$#" -gt 0 ]; then
  manifests=("$@")
else
  shopt -s nullglob
  manifests=(examples/kubernetes/*.yaml)
  shopt -u nullglob
fi
[ "${#manifests[@]}" -gt 0 ] || { echo "no manifests to validate" >&2; exit 1; }

tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/pip" install --quiet --disable-pip-version-check \
  "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"

for version in "${KUBERNETES_VERSIONS[@]}"; do
  echo "kubernetes-validate $KUBERNETES_VALIDATE_VERSION: Kubernetes $version, strict: ${manifests[*]}"
  # It exits 1 when any document of any file fails; --quiet prints only failures and warnings.
  "$tools/venv/bin/kubernetes-validate" --strict --quiet -k "$version" "${manifests[@]}"
done
echo "all ${#manifests[@]} manifests are valid"
