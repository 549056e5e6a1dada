#!/usr/bin/env bash
# Fuzz hone's parsers of hostile input on the stable toolchain (docs/fuzzing.md).
#
#   bash scripts/fuzz.sh                  build every target, run each for 60 s, print a table
#   bash scripts/fuzz.sh TARGET [SECONDS] build and run one target
#   bash scripts/fuzz.sh all SECONDS      every target, SECONDS each
#   bash scripts/fuzz.sh build            only build the instrumented targets
#   bash scripts/fuzz.sh list             the targets' names
#
# No cargo-fuzz and no nightly: the fuzz crate (fuzz/, libfuzzer-sys) is built with cargo and
# the coverage instrumentation libFuzzer needs, all stable codegen flags (SanitizerCoverage's
# module pass with inline 8-bit counters, the PC table, comparison tracing and stack depth). No
# sanitizer (AddressSanitizer needs nightly): what is found is a panic, a stack overflow, a
# timeout or running out of memory. Each run starts from fuzz/corpus/TARGET (the seeds, kept in
# git) and grows a working corpus in fuzz/target/corpus/TARGET; a crash is written to
# fuzz/artifacts/TARGET/. Environment: FUZZ_JOBS (cargo's -j, default 1), FUZZ_ARGS (more
# libFuzzer flags).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every fuzz target: fuzz/fuzz_targets/NAME.rs, a [[bin]] in fuzz/Cargo.toml.
TARGETS=(job_spec policy patch sse bedrock_stream junit shell memory_file transcript eval_tasks)

triple="$(rustc -vV | sed -n 's/^host: //p')"
flags=(
  -Cpasses=sancov-module
  -Cllvm-args=-sanitizer-coverage-level=4
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
  -Cllvm-args=-sanitizer-coverage-pc-table
  -Cllvm-args=-sanitizer-coverage-trace-compares
  -Cllvm-args=-sanitizer-coverage-stack-depth
  --cfg fuzzing
)

build() {
  # --target keeps the flags off build scripts and proc macros (they run on the host unlinked
  # to libFuzzer).
  RUSTFLAGS="${flags[*]}" cargo build --locked --release -j "${FUZZ_JOBS:-1}" \
    --manifest-path fuzz/Cargo.toml --target "$triple" --bins
}

# Run target $1 for $2 seconds; one table row from libFuzzer's log.
run() {
  local name="$1" secs="$2" bin="fuzz/target/$triple/release/$1"
  local work="fuzz/target/corpus/$name" artifacts="fuzz/artifacts/$name" log
  mkdir -p "$work" "$artifacts"
  log="fuzz/target/$name.log"
  local status=0 dict=()
  # A target's dictionary of tokens (fuzz/dict/TARGET.dict), where it has one.
  [ -f "fuzz/dict/$name.dict" ] && dict=(-dict="fuzz/dict/$name.dict")
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  "$bin" "$work" "fuzz/corpus/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" ${FUZZ_ARGS:-} >"$log" 2>&1 || status=$?
  local execs rate crashes
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  crashes="$(find "$artifacts" -type f | wc -l)"
  printf '%-15s %6s %12s %9s %8s\n' "$name" "$secs" "${execs:-?}" "${rate:-?}" "$crashes"
  if [ "$status" -ne 0 ]; then
    echo "  $name stopped with status $status: see $log; the input is in $artifacts/" >&2
    return 1
  fi
}

case "${1:-all}" in
  list) printf '%s\n' "${TARGETS[@]}"; exit 0 ;;
  build) build; exit 0 ;;
  all) names=("${TARGETS[@]}") ;;
  *)
    [[ " ${TARGETS[*]} " == *" $1 "* ]] || { echo "no fuzz target '$1' (one of: ${TARGETS[*]})" >&2; exit 2; }
    names=("$1")
    ;;
esac
secs="${2:-60}"
build
printf '%-15s %6s %12s %9s %8s\n' target seconds executions exec/s crashes
failed=0
for name in "${names[@]}"; do
  run "$name" "$secs" || failed=1
done
exit "$failed"
