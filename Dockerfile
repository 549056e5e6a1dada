# syntax=docker/dockerfile:1

# hone's container image: one static binary on Alpine, with git (hone runs the git CLI for
# remotes) and CA certificates (the model API, GitHub). docs/containers.md says how to run it.
#
#   docker build -t hone .                                  # the runtime image (the default target)
#   docker build --target quickstart -t hone:quickstart .   # + python3 and examples/quickstart
#   docker run --rm --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined hone:quickstart   # the README's first command, offline
#
# Targets: `builder` (the toolchain), `runtime` (what CI runs), `quickstart` (a demo on top of
# runtime). The last stage re-exports `runtime`, so a build without --target gives runtime.

# ---------------------------------------------------------------------------------------------
# builder: Rust on Alpine, so the host target is *-unknown-linux-musl (x86_64 or aarch64).
# hone needs Rust 1.90 or newer (Cargo.toml's rust-version); 1.95 is the stable release hone was
# last built and tested with.
FROM rust:1.95-alpine3.23 AS builder

# The C the -sys crates compile, all through the `cc` crate:
#   - libgit2-sys (bundled libgit2) and libz-sys (bundled zlib);
#   - the tree-sitter runtime and grammars;
#   - aws-lc-sys 0.47 (aws-lc-rs, via octocrab and rustls), whose cc builder covers
#     x86_64/aarch64 musl with pre-generated bindings and assembly: no cmake, perl, nasm, clang
#     or bindgen.
# gcc and musl-dev (headers, crt objects, libc.a) are all that takes; gcc brings binutils, whose
# readelf checks the result below. pkgconf is left out on purpose, so that libgit2-sys and
# aws-lc-sys build their bundled copies instead of looking for a system library, and
# LIBZ_SYS_STATIC=1 (below) makes libz-sys build its bundled zlib rather than probe for `-lz`.
# Versions are not pinned (DL3018 is ignored inline): the packages come from the repository of
# the pinned Alpine release, which takes only fixes within that release, and Alpine drops a
# package's older revisions when it publishes a fix, so a pinned `gcc=<rev>` stops building.
# hadolint ignore=DL3018
RUN apk add --no-cache gcc musl-dev

# ash (busybox) with pipefail, so a failing command in a pipeline fails the RUN.
SHELL ["/bin/ash", "-eo", "pipefail", "-c"]

WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src/ src/

# The registry and the target dir are cache mounts: a rebuild after a source change recompiles
# hone, not its ~300 dependencies. The binary is copied out of the mount (which is not part of
# the image) to /out.
# Static linking: rustup's *-unknown-linux-musl targets link the C runtime statically by
# default (crt-static). Setting `-C target-feature=+crt-static` in RUSTFLAGS here would also
# apply to the proc-macro crates (there is no --target), and rustc refuses to build a proc macro
# with crt-static. So the build checks the result instead: no program interpreter and no shared
# library, or it fails.
RUN --mount=type=cache,id=hone-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=hone-target,target=/src/target,sharing=locked \
    LIBZ_SYS_STATIC=1 cargo build --release --locked \
 && if readelf --program-headers --dynamic target/release/hone | grep -E '^ +INTERP |\(NEEDED\)'; then \
      echo "target/release/hone is not statically linked" >&2; exit 1; \
    fi \
 && install -D -m 0755 target/release/hone /out/hone \
 && /out/hone --version

# ---------------------------------------------------------------------------------------------
# runtime: the binary, git and CA certificates on Alpine, as a non-root user.
FROM alpine:3.23 AS runtime

LABEL org.opencontainers.image.title="hone" \
      org.opencontainers.image.description="Headless LLM coding agent for CI: job spec -> tool loop -> verify -> commit -> reports" \
      org.opencontainers.image.source="https://github.com/hone/hone" \
      org.opencontainers.image.url="https://github.com/hone/hone" \
      org.opencontainers.image.documentation="https://github.com/hone/hone/blob/main/docs/containers.md" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0" \
      org.opencontainers.image.version="0.1.0"

# git: `ls-remote`, `push` and `fetch` go through the git CLI (commits are libgit2, in process).
# ca-certificates: TLS to the model API and GitHub (rustls reads the system roots).
# Not pinned, for the reason given in the builder stage: a rebuild of the runtime image should
# pick up Alpine's fixes to git and the CA bundle, not fail because a pinned revision is gone.
# The user: uid and gid 10001, a home (the jail shows it through an overlay), and /work, the
# default working directory, where a CI job mounts the repository.
# hadolint ignore=DL3018
RUN apk add --no-cache ca-certificates git \
 && addgroup -S -g 10001 hone \
 && adduser -S -D -u 10001 -G hone -h /home/hone -g hone hone \
 && install -d -o 10001 -g 10001 -m 0755 /work

COPY --from=builder /out/hone /usr/local/bin/hone

USER 10001:10001
WORKDIR /work
ENTRYPOINT ["hone"]
CMD ["--help"]

# ---------------------------------------------------------------------------------------------
# quickstart: `docker run --rm <the security options> hone:quickstart` runs
# `hone run examples/quickstart/job.yaml`, as the README's first command does: the bundled repo
# is copied into a scratch git repository under examples/quickstart/.hone/scratch, a scripted
# model (no network, no key) fixes it, hone runs `python3 -m unittest` in its jail and commits
# on hone/quickstart. The reports land in /work/examples/quickstart/.hone/reports.
FROM runtime AS quickstart

# root (uid 0) for apk; the last USER below is the hone user again.
USER 0:0
# python3: the quickstart's check. Not pinned, as above.
# hadolint ignore=DL3018
RUN apk add --no-cache python3

# Owned by the hone user: hone writes .hone/ (the scratch repository, the reports) beside the
# spec. The scratch commit's author is built in by hone, so no git identity is needed.
COPY --chown=10001:10001 examples/quickstart/ /work/examples/quickstart/

USER 10001:10001
CMD ["run", "examples/quickstart/job.yaml"]

# ---------------------------------------------------------------------------------------------
# The default target: `docker build .` without --target builds the last stage, so it is the
# runtime image again, and the quickstart is built only when asked for.
FROM runtime
