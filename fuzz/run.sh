#!/usr/bin/env bash
# Fuzzes offsetkeeper's input parsing by hand (not CI): znode values, paths and names
# (parse_value), `validate` (validate), the kafkaParams translation (kafka_params), the brokers'
# answers (broker_answers) and what ZooKeeper servers say besides offsets (zookeeper_answers).
# The build's quick check (compile on stable, 10 s each under cargo-fuzz) is fuzz/check.sh.
#
#   bash fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]    default 200 s each, all targets
#
# Needs cargo-fuzz (installed from crates.io if missing) and a nightly toolchain. Without
# nightly it falls back to the property tests run long (a bounded random-input harness, no
# coverage guidance): PROPTEST_CASES=200000 cargo test -p offsetkeeper --lib properties.
# Crashes land in fuzz/artifacts/<target>/, the corpus in fuzz/corpus/<target>/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
SECONDS_PER_TARGET=${1:-200}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(parse_value validate kafka_params broker_answers zookeeper_answers)

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz/run.sh: no nightly toolchain; running the property tests long instead" >&2
  cd ..
  PROPTEST_CASES=200000 exec cargo test --release -p offsetkeeper --lib properties
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz/run.sh: installing cargo-fuzz from crates.io" >&2
  cargo install cargo-fuzz
fi

status=0
for target in "${TARGETS[@]}"; do
  echo "== $target: ${SECONDS_PER_TARGET}s" >&2
  mkdir -p "corpus/$target"
  started=$SECONDS
  if ! cargo +nightly fuzz run "$target" "corpus/$target" -- \
      -max_total_time="$SECONDS_PER_TARGET" -max_len=4096 -timeout=10 -print_final_stats=1 \
      2>"corpus/$target.log"; then
    status=1
    echo "== $target: FAILED, see fuzz/corpus/$target.log and fuzz/artifacts/$target/" >&2
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:|Done " "corpus/$target.log" | tail -4 >&2 || true
  echo "== $target: $((SECONDS - started))s, corpus $(ls "corpus/$target" | wc -l) inputs" >&2
done
exit $status
