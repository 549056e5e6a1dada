#!/usr/bin/env bash
# Mutation testing of the decision modules: cargo-mutants changes the code of one file at a time
# (a condition flipped, a function returning a fixed value, ...) and runs that file's own unit
# tests; a mutant the tests do not notice is "missed". Results go to BENCHMARKS.md ("Mutation
# testing"). Slow (each of the ~400 mutants rebuilds and runs the unit tests), so it is not part
# of .ci/run.
#
#   bench/mutants.sh                        # every file below
#   bench/mutants.sh src/redact.rs ...      # only these (paths as in the table)
#
# Needs cargo-mutants (`cargo install --locked cargo-mutants`). Per file it prints mutants,
# caught, missed, unviable (the mutant does not compile) and timeouts (the mutant made the tests
# hang, which a test run would notice too), and the score: caught / (caught + missed), so
# unviable mutants and timeouts are left out of it. Exits 1 when a file scores under 90%.
# The full lists are in target/mutants/<file>/mutants.out/ (caught.txt, missed.txt, ...).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# Each file and the unit tests that belong to it (a libtest name filter).
FILES=(
  "src/policy/decide.rs policy::"
  "src/policy/shell.rs policy::"
  "src/policy/interpreters.rs policy::"
  "src/verify/mod.rs verify::"
  "src/guard.rs guard::"
  "src/redact.rs redact::"
)
MIN_SCORE=90

# Property tests draw the same cases on every run, so a score repeats on an unchanged tree.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-1100000011}"
# One build directory for all the runs, so dependencies are compiled once, not once per file
# (cargo-mutants copies the source tree, without target/, for each run).
export CARGO_TARGET_DIR="$PWD/target/mutants/build"
out_root="target/mutants"
mkdir -p "$out_root"

selected=("$@")
wanted() {
  [ "${#selected[@]}" -eq 0 ] && return 0
  local s
  for s in "${selected[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

count() { if [ -f "$1" ]; then grep -c . "$1" || true; else echo 0; fi; }

start=$SECONDS
summary=()
failed=0
for entry in "${FILES[@]}"; do
  read -r file filter <<< "$entry"
  wanted "$file" || continue
  name="${file#src/}"
  name="${name//\//_}"
  name="${name%.rs}"
  out="$out_root/$name"
  rm -rf "$out/mutants.out"
  mkdir -p "$out"
  t0=$SECONDS
  echo "== $file (tests: $filter)"
  # --lib for the build and the test run alike: only the unit-test binary is built per mutant.
  # --cap-lints: a mutant that only trips a lint is still tested, not counted as unviable.
  # --timeout: the unit tests of a file take about 2 s; a mutant that makes them loop forever is
  # stopped after 30 s and counted as a timeout.
  cargo mutants --file "$file" --output "$out" --profile mutants --cap-lints true \
    --timeout 30 --build-timeout 600 --colors never \
    --cargo-arg=--lib --cargo-test-arg=-- --cargo-test-arg="$filter"
  status=$?
  # 0: all caught; 2: some missed; 3: some timed out. Anything else is a failure of the run.
  case $status in 0 | 2 | 3) ;; *) echo "cargo mutants failed on $file (exit $status)" >&2; exit 1 ;; esac
  dir="$out/mutants.out"
  caught=$(count "$dir/caught.txt")
  missed=$(count "$dir/missed.txt")
  unviable=$(count "$dir/unviable.txt")
  timeouts=$(count "$dir/timeout.txt")
  total=$((caught + missed + unviable + timeouts))
  tested=$((caught + missed))
  score=$(awk -v c="$caught" -v t="$tested" 'BEGIN { printf "%.1f", t ? 100 * c / t : 100 }')
  awk -v s="$score" -v m="$MIN_SCORE" 'BEGIN { exit !(s < m) }' && failed=1
  summary+=("$(printf '%-28s %7s %6s %6s %8s %8s %6s%% %5ss' \
    "$file" "$total" "$caught" "$missed" "$unviable" "$timeouts" "$score" "$((SECONDS - t0))")")
done

echo
printf '%-28s %7s %6s %6s %8s %8s %7s %6s\n' file mutants caught missed unviable timeouts score time
printf '%s\n' "${summary[@]}"
echo "wall time: $((SECONDS - start)) s (score = caught / (caught + missed); unviable and timeouts excluded)"
if [ "$failed" = 1 ]; then
  echo "a file scores under ${MIN_SCORE}%; its survivors are in $out_root/<file>/mutants.out/missed.txt" >&2
  exit 1
fi
