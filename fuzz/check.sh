#!/usr/bin/env bash
# Keeps the fuzz targets from rotting: compiles every target on the stable toolchain (the
# targets are plain binaries there, libFuzzer linked in without coverage), then, when a nightly
# toolchain and cargo-fuzz are both installed, runs each target briefly under cargo-fuzz and
# fails on a crash. Installs nothing. For long runs: fuzz/run.sh.
#
#   bash fuzz/check.sh [TARGET...]      all targets by default
#
#   OFFSETKEEPER_FUZZ_SECONDS   seconds of fuzzing per target when nightly and cargo-fuzz are
#                               there (default 10; 0 compiles only)
#
# The stable build goes to fuzz/target/debug, cargo-fuzz's to fuzz/target/<triple>/release;
# crashes land in fuzz/artifacts/<target>/, the corpus grows in fuzz/corpus/<target>/ (all three
# ignored by git). The first cargo-fuzz build compiles every dependency again, instrumented.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
SECONDS_PER_TARGET=${OFFSETKEEPER_FUZZ_SECONDS:-10}
ALL=(parse_value validate kafka_params broker_answers zookeeper_answers)
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
case $SECONDS_PER_TARGET in
  '' | *[!0-9]*) echo "fuzz/check.sh: OFFSETKEEPER_FUZZ_SECONDS '$SECONDS_PER_TARGET' is not a whole number of seconds" >&2; exit 2 ;;
esac

have_toolchain() { rustup toolchain list 2>/dev/null | grep -q "^$1"; }
stable=()
if have_toolchain stable; then stable=(+stable); fi

bins=()
for target in "${TARGETS[@]}"; do bins+=(--bin "$target"); done
mkdir -p target
log=target/check-build.log
started=$SECONDS
# The vendored crates' own warnings are not this check's business: the log keeps them.
if ! cargo "${stable[@]}" build "${bins[@]}" >"$log" 2>&1; then
  grep -E '^(error|warning: unused)|^ *--> |^ *= ' "$log" >&2 || tail -40 "$log" >&2
  echo "fuzz/check.sh: the fuzz targets do not compile on $(cargo "${stable[@]}" --version); full output in fuzz/$log" >&2
  exit 1
fi
echo "fuzz/check.sh: ${#TARGETS[@]} targets compile on $(cargo "${stable[@]}" --version) ($((SECONDS - started)) s)" >&2

if [ "$SECONDS_PER_TARGET" -eq 0 ]; then
  exit 0
fi
if ! have_toolchain nightly || ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz/check.sh: no nightly toolchain with cargo-fuzz; compiled only, not fuzzed" >&2
  exit 0
fi

status=0
for target in "${TARGETS[@]}"; do
  mkdir -p "corpus/$target"
  started=$SECONDS
  if ! cargo +nightly fuzz run "$target" "corpus/$target" -- \
      -max_total_time="$SECONDS_PER_TARGET" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 >"corpus/$target.log" 2>&1; then
    status=1
    grep -E "panicked|ERROR|SUMMARY|Test unit written|Crash|deadly" "corpus/$target.log" | head -20 >&2 || true
    echo "fuzz/check.sh: $target FAILED; log fuzz/corpus/$target.log, input in fuzz/artifacts/$target/" >&2
    continue
  fi
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "corpus/$target.log" | grep -oE '[0-9]+$' || echo '?')
  echo "fuzz/check.sh: $target: $runs runs in $((SECONDS - started)) s (build included), no crash" >&2
done
exit $status
