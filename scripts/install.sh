#!/usr/bin/env bash
# Install a released hone binary: download the archive for this machine from a GitHub release,
# check it against the release's checksum file, unpack it and check that it runs. The Action
# (action.yml), the fleet workflow and anyone by hand use it:
#
#   HONE_VERSION=0.1.0 bash scripts/install.sh            # prints the installed binary's path
#
# Environment (all optional):
#   HONE_VERSION      the version to install (`0.1.0` or `v0.1.0`). Without it, the version is
#                     taken from where the Action was checked out: ACTION_REF when it is a version
#                     tag (`v1.2.3`), or the version in $ACTION_PATH/Cargo.toml when ACTION_REF is
#                     a major or minor tag (`v1`, `v1.2`). A branch or a commit has no release.
#   HONE_REPO         owner/name of hone's GitHub repository (default: the Action's, else hone/hone)
#   HONE_RELEASE_URL  where the releases are (default: https://github.com/$HONE_REPO/releases/download);
#                     the files are read from $HONE_RELEASE_URL/v$VERSION/
#   HONE_TARGET       the target triple (default: this machine's; see `target` below)
#   HONE_INSTALL_DIR  where the binary goes (default: ~/.local/bin)
#
# stdout: the installed binary's path, and nothing else; messages go to stderr.
# Exit status:
#   0  installed
#   1  failed: a download that broke, a checksum file without this archive, a checksum that does
#      not match, an archive without a binary that runs. The caller must not build instead: a
#      mismatch may be tampering, and it has to be looked at.
#   3  no release binary: no version to install, a platform with no build, or a release without
#      this archive (HTTP 404). The caller may build from source.
set -euo pipefail

readonly EXIT_FAILED=1
readonly EXIT_NO_BINARY=3
readonly CHECKSUMS=sha256.sum # cargo-dist's name for the release's SHA256SUMS file
scratch="" # the download directory, removed on exit

say() { echo "hone install: $*" >&2; }
fail() { say "$*"; exit "$EXIT_FAILED"; }
no_binary() { say "$*"; exit "$EXIT_NO_BINARY"; }

# Where the runner checked the Action out: .../_actions/<owner>/<repo>/<ref>[/<dir>]. Composite
# actions do not always get github.action_ref and github.action_repository (actions/runner#2473),
# so they are read from the path when missing. $1: 1 for the repository, 2 for the ref.
from_action_path() {
  local rest="${ACTION_PATH:-}"
  [[ "$rest" == */_actions/*/*/* ]] || return 0
  rest="${rest##*/_actions/}"
  local owner="${rest%%/*}"
  rest="${rest#*/}"
  local name="${rest%%/*}"
  rest="${rest#*/}"
  if [ "$1" = 1 ]; then echo "$owner/$name"; else echo "${rest%%/*}"; fi
}

# The version to install, without its `v`; empty when there is none.
version() {
  local v="${HONE_VERSION:-}" ref="${ACTION_REF:-}"
  [ -n "$ref" ] || ref="$(from_action_path 2)"
  if [ -z "$v" ] && [[ "$ref" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$ ]]; then
    v="$ref"
  elif [ -z "$v" ] && [[ "$ref" =~ ^v[0-9]+(\.[0-9]+)?$ ]] && [ -f "${ACTION_PATH:-}/Cargo.toml" ]; then
    # A moving major tag (v1) points at a released commit, whose Cargo.toml has its version.
    v="$(sed -n 's/^version = "\([^"]*\)"$/\1/p' "$ACTION_PATH/Cargo.toml" | head -n1)"
  fi
  echo "${v#v}"
}

# The release's target triple for this machine; empty when there is no build for it.
target() {
  if [ -n "${HONE_TARGET:-}" ]; then echo "$HONE_TARGET"; return; fi
  local os arch
  os="$(uname -s)"
  arch="$(uname -m)"
  case "$arch" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) return 0 ;;
  esac
  case "$os" in
    Linux) echo "$arch-unknown-linux-musl" ;; # static: runs on any Linux, glibc or not
    Darwin) echo "$arch-apple-darwin" ;;
  esac
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# Download $1 to $2. Returns 0 when downloaded, 44 on HTTP 404; fails the install otherwise.
# Bounded: 10 s to connect, 5 minutes in all, a few retries of transient errors (not of a 404).
download() {
  local url="$1" dest="$2" proto='=https' code
  # A release URL the user gave may be plain http (a mirror on the local network, a test).
  case "${HONE_RELEASE_URL:-}" in http://*) proto='=http,https' ;; esac
  code="$(curl --silent --show-error --location --proto "$proto" --connect-timeout 10 \
    --max-time 300 --retry 3 --output "$dest" --write-out '%{http_code}' "$url")" ||
    fail "downloading $url failed (curl exit $?); check the network or set HONE_RELEASE_URL to a mirror"
  case "$code" in
    200) return 0 ;;
    404) return 44 ;;
    *) fail "downloading $url failed: HTTP $code" ;;
  esac
}

main() {
  local version target repo base archive dir want got bin dest
  version="$(version)"
  [ -n "$version" ] ||
    no_binary "no version to install (set HONE_VERSION, or use the Action at a version tag such as v1)"
  target="$(target)"
  [ -n "$target" ] || no_binary "no release binary for $(uname -s) $(uname -m)"
  repo="${HONE_REPO:-$(from_action_path 1)}"
  repo="${repo:-hone/hone}"
  base="${HONE_RELEASE_URL:-https://github.com/$repo/releases/download}"
  base="${base%/}/v$version"
  archive="hone-$target.tar.gz"
  dir="$(mktemp -d)"
  scratch="$dir"
  trap 'rm -rf "$scratch"' EXIT

  say "downloading hone $version for $target from $base/"
  local status=0
  download "$base/$archive" "$dir/$archive" || status=$?
  [ "$status" = 0 ] || no_binary "release v$version has no $archive"
  download "$base/$CHECKSUMS" "$dir/$CHECKSUMS" ||
    fail "release v$version has $archive but no $CHECKSUMS to check it against"

  # Lines are `<sha256> *<file>` (or two spaces for text mode), as sha256sum writes them.
  want="$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$dir/$CHECKSUMS")"
  [ -n "$want" ] || fail "$CHECKSUMS of release v$version does not list $archive"
  got="$(sha256 "$dir/$archive")"
  [ "$got" = "$want" ] ||
    fail "checksum mismatch for $archive: expected $want, got $got. The download is not what was released; nothing was installed"
  say "checksum verified: $archive sha256 $got"

  mkdir "$dir/unpacked"
  tar -xzf "$dir/$archive" -C "$dir/unpacked" || fail "$archive is not a gzip tar archive"
  bin="$(find "$dir/unpacked" -type f -name hone | head -n1)"
  [ -n "$bin" ] || fail "$archive holds no \`hone\` binary"
  chmod +x "$bin"
  local runs
  runs="$("$bin" --version 2>/dev/null)" || fail "the hone in $archive does not run on this machine"
  [[ "$runs" == *" $version"* ]] || fail "the hone in $archive says \`$runs\`, not version $version"

  dest="${HONE_INSTALL_DIR:-$HOME/.local/bin}"
  mkdir -p "$dest"
  # Renamed into place, so a concurrent user never runs a half-written binary.
  cp "$bin" "$dest/.hone.$$"
  mv -f "$dest/.hone.$$" "$dest/hone"
  say "installed $runs at $dest/hone"
  echo "$dest/hone"
}

main "$@"
