#!/usr/bin/env bash
# The README's test command on a fresh machine: a fresh clone of HEAD in a fresh Debian 12
# container that has only what the README asks for building (gcc and this user's rustup
# toolchain), as root, then `bash .ci/test` there. Needs root, debootstrap and unshare; no Docker
# engine (the container is a debootstrap'ed root, pivot_root'ed in new mount, PID, UTS and IPC
# namespaces, with the host's network for the package registries).
#
#   sudo bash scripts/fresh-test.sh [DIR]     (default DIR: target/fresh; the log is DIR/test.log)
#
# The machine's own CA certificates and registry settings (a proxy's CA, pip's and npm's config)
# are copied in, as a container of this machine's kind would have them; nothing of hone's is.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "fresh-test.sh: run as root (it builds a container)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "fresh-test.sh: apt-get install debootstrap" >&2; exit 1; }
dir="$(realpath -m "${1:-target/fresh}")"
root="$dir/root"
rm -rf "$root"
mkdir -p "$dir"
echo "fresh-test.sh: debootstrap bookworm into $root" >&2
debootstrap --variant=minbase --include=ca-certificates,gcc,libc6-dev bookworm "$root" \
  http://deb.debian.org/debian > "$dir/debootstrap.log" 2>&1
# The Rust toolchain, as rustup installs it in a home (the default one only).
home_rustup="${RUSTUP_HOME:-$HOME/.rustup}"
toolchain="$(rustup default | cut -d' ' -f1)"
mkdir -p "$root/root/.rustup/toolchains" "$root/root/.cargo"
cp -a "$home_rustup/settings.toml" "$root/root/.rustup/"
cp -a "$home_rustup/toolchains/$toolchain" "$root/root/.rustup/toolchains/"
cp -a "${CARGO_HOME:-$HOME/.cargo}/bin" "$root/root/.cargo/"
# The machine's network settings: resolver, CA certificates, registry configuration.
cp /etc/resolv.conf "$root/etc/resolv.conf"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
for f in /etc/pip.conf /etc/npmrc /usr/etc/npmrc /etc/apt/apt.conf.d/99artifact-registry /etc/apt/sources.list.d/debian.sources; do
  if [ -f "$f" ]; then mkdir -p "$root$(dirname "$f")" && cp "$f" "$root$f"; fi
done
[ -f "$root/etc/apt/sources.list.d/debian.sources" ] && rm -f "$root/etc/apt/sources.list"
git clone -q . "$root/root/hone"
echo "fresh-test.sh: bash .ci/test in the container (log: $dir/test.log)" >&2
vars=(HOME=/root PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
for v in NODE_EXTRA_CA_CERTS SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT PIP_DEFAULT_TIMEOUT; do
  if [ -n "${!v:-}" ]; then vars+=("$v=${!v}"); fi
done
status=0
# shellcheck disable=SC2016 # expanded by the container's shell, from its arguments
unshare --mount --pid --uts --ipc --fork --propagation private bash -c '
  set -e
  root="$1"; shift
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mount -t tmpfs tmpfs "$root/tmp"
  hostname fresh
  cd "$root"; mkdir -p .old; pivot_root . .old; umount -l /.old; rmdir /.old
  cd /root/hone
  exec env -i "$@" bash -c "update-ca-certificates >/dev/null 2>&1; time bash .ci/test"
' bash "$root" "${vars[@]}" > "$dir/test.log" 2>&1 || status=$?
tail -5 "$dir/test.log" >&2
echo "fresh-test.sh: .ci/test exited with $status" >&2
exit "$status"
