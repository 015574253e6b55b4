#!/usr/bin/env bash
# One cell of the server compatibility matrix (gradle compat / compatFast): starts ZooKeeper
# ZK_VERSION and Kafka KAFKA_VERSION on 127.0.0.1, runs the load, commit, ownership and CLI
# scenarios against them (the cargo integration tests that use only the shared cluster, plus
# repeated_loads), stops the servers (also on failure) and writes OUT/<cell>.result and
# OUT/<cell>/scenarios.log.
#
#   run-cell.sh ZK_VERSION KAFKA_VERSION OUT
#
# Servers: Kafka in ZooKeeper mode runs on the cell's ZooKeeper (tests/cluster/cluster.sh with
# OFFSETKEEPER_ZK_CLASSPATH / OFFSETKEEPER_KAFKA_CLASSPATH). Kafka 4.x is KRaft only: a
# KRaft broker (tests/cluster/kraft.sh) and the cell's ZooKeeper (tests/cluster/ensemble.sh,
# one node) holding the offsets.
#
# Env: OFFSETKEEPER_COMPAT_CLASSPATHS  folder of zk-<v>.txt and kafka-<v>.txt
#                                      (default <repo>/build/compat/classpath; gradle compatClasspaths)
#      OFFSETKEEPER_KRAFT_CLASSPATH    Kafka 4 classpath file for kraft.sh (gradle kraftClasspath)
#      JAVA_HOME                       JVM for the servers (default: java on PATH)
# Exit status: 0 when every scenario passed, 1 otherwise (also when a server does not start).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER=$ROOT/tests/cluster
SELF=run-cell.sh
# shellcheck source=tests/cluster/lib.sh
. "$CLUSTER/lib.sh"

[ $# -eq 3 ] || die "usage: run-cell.sh ZK_VERSION KAFKA_VERSION OUT"
ZK_VERSION=$1 KAFKA_VERSION=$2
mkdir -p "$3"
OUT=$(cd "$3" && pwd)
CLASSPATHS=${OFFSETKEEPER_COMPAT_CLASSPATHS:-$ROOT/build/compat/classpath}
CELL="zk-${ZK_VERSION}_kafka-${KAFKA_VERSION}"
DIR=$OUT/$CELL
RESULT=$OUT/$CELL.result
LOG=$DIR/scenarios.log

# The scenarios: every test of these binaries uses only the shared cluster, except the secured
# cluster's CLI tests (skipped: command_config_reaches_the_secured_cluster and the migrate_over_*
# tests of each secured listener). Fault tests with clusters of their own (faults,
# faults_zookeeper, security's restarts) are not part of the matrix. What the broker can do
# (topic IDs, deleteRecords, CreatePartitions) the tests ask themselves, of the Kafka release in
# OFFSETKEEPER_KAFKA_VERSION (rust/core/tests/support: Capabilities): they stage another way or
# assert what offsetkeeper does without it, so no test is skipped for the broker's age. identity:
# re-created topics and stale partitions, whose folder listings are part of every load's read
# (pipelined before ZooKeeper 3.6, one multi-read after).
CORE_TESTS=(--test load --test commit --test reliability --test admin --test server_version
  --test identity)
CLI_TESTS=(--test cli --test repeated_loads)
SKIP=(--skip command_config_reaches_the_secured_cluster --skip migrate_over_)
# Kafka 0.10.1+ is served over Metadata v1-v3 and ListOffsets v1.
# OFFSETKEEPER_COMPAT_EXPECT=refusal makes a cell assert instead that offsetkeeper refuses the
# broker (CLI describe and reset: exit status and message).
EXPECT=${OFFSETKEEPER_COMPAT_EXPECT:-scenarios}
REFUSAL='needs Kafka 0\.1[01][.0-9]* or later|the broker answers Metadata v[0-9]+-v[0-9]+; offsetkeeper speaks'

ZK_CLASSPATH=$CLASSPATHS/zk-$ZK_VERSION.txt
[ -s "$ZK_CLASSPATH" ] || die "no classpath file $ZK_CLASSPATH; run 'gradle compatClasspaths'"
case $KAFKA_VERSION in
  4.*) MODE=kraft ;;
  *)
    MODE=zookeeper
    KAFKA_CLASSPATH=$CLASSPATHS/kafka-$KAFKA_VERSION.txt
    [ -s "$KAFKA_CLASSPATH" ] || die "no classpath file $KAFKA_CLASSPATH; run 'gradle compatClasspaths'"
    ;;
esac

rm -rf "$DIR" "$RESULT"
mkdir -p "$DIR"
START=$SECONDS

stop_servers() {
  if [ "$MODE" = kraft ]; then
    bash "$CLUSTER/kraft.sh" stop "$DIR/kraft" || log "kraft.sh stop failed"
    bash "$CLUSTER/ensemble.sh" stop "$DIR/zk" || log "ensemble.sh stop failed"
  else
    bash "$CLUSTER/cluster.sh" stop "$DIR/cluster" || log "cluster.sh stop failed"
  fi
}

# result STATUS LOADS NOTE: one line, '|'-separated, for gradle/compat.gradle's table.
result() {
  printf '%s|%s|%s|%s|%s|%s|%s\n' "$ZK_VERSION" "$KAFKA_VERSION" "$MODE" "$1" "$2" \
    "$((SECONDS - START))" "$3" >"$RESULT"
}

trap 'rc=$?; stop_servers >>"$DIR/servers.log" 2>&1; [ -f "$RESULT" ] || result fail - "run-cell.sh failed (exit $rc)"; exit $rc' EXIT

log "$CELL: starting servers ($MODE)"
if [ "$MODE" = kraft ]; then
  [ -n "${OFFSETKEEPER_KRAFT_CLASSPATH:-}" ] || die "OFFSETKEEPER_KRAFT_CLASSPATH is not set; run 'gradle kraftClasspath'"
  [ -f "$CLUSTER/kraft.sh" ] || die "$CLUSTER/kraft.sh is missing (branch kafka)"
  if ! OFFSETKEEPER_ZK_CLASSPATH=$ZK_CLASSPATH OFFSETKEEPER_ZK_TICK_MS=2000 \
      bash "$CLUSTER/ensemble.sh" start "$DIR/zk" 1 >>"$DIR/servers.log" 2>&1; then
    result fail - "ZooKeeper $ZK_VERSION did not start: $(tail -n 1 "$DIR/servers.log")"
    tail -n 40 "$DIR/servers.log" >&2
    exit 1
  fi
  if ! bash "$CLUSTER/kraft.sh" start "$DIR/kraft" 1 >>"$DIR/servers.log" 2>&1; then
    result fail - "Kafka $KAFKA_VERSION (KRaft) did not start: $(tail -n 1 "$DIR/servers.log")"
    tail -n 40 "$DIR/servers.log" >&2
    exit 1
  fi
  grep -h '^OFFSETKEEPER_ZK=' "$DIR/zk/ensemble.env" >"$DIR/cell.env"
  grep -h '^OFFSETKEEPER_BOOTSTRAP=' "$DIR/kraft/kraft.env" >>"$DIR/cell.env"
else
  if ! OFFSETKEEPER_ZK_CLASSPATH=$ZK_CLASSPATH OFFSETKEEPER_KAFKA_CLASSPATH=$KAFKA_CLASSPATH \
      bash "$CLUSTER/cluster.sh" start "$DIR/cluster" >>"$DIR/servers.log" 2>&1; then
    result fail - "servers did not start: $(grep 'cluster.sh:' "$DIR/servers.log" | tail -n 1)"
    tail -n 40 "$DIR/servers.log" >&2
    exit 1
  fi
  cp "$DIR/cluster/cluster.env" "$DIR/cell.env"
fi
[ "$(grep -c '^OFFSETKEEPER_\(ZK\|BOOTSTRAP\)=.' "$DIR/cell.env")" -eq 2 ] || die "incomplete $DIR/cell.env"
log "$CELL: servers up: $(tr '\n' ' ' <"$DIR/cell.env")"

# The shared-cluster variables of rust/core/tests/support; nothing else from the caller's cluster.
set -a
# shellcheck source=/dev/null
. "$DIR/cell.env"
set +a
unset OFFSETKEEPER_CLUSTER_ENV OFFSETKEEPER_SECURE_ENV
export OFFSETKEEPER_ZK_VERSION=$ZK_VERSION # server_version.rs checks what srvr tells
export OFFSETKEEPER_KAFKA_VERSION=$KAFKA_VERSION # and which versions the broker is asked in

# refused ARGS...: the CLI must exit 1.. with one stderr line matching $REFUSAL.
refused() {
  local out rc=0
  out=$(cargo run -q -p offsetkeeper-cli -- --zookeeper "$OFFSETKEEPER_ZK" \
    --bootstrap-servers "$OFFSETKEEPER_BOOTSTRAP" "$@" 2>&1 >/dev/null) || rc=$?
  echo "offsetkeeper $*: exit $rc: $out"
  [ "$rc" -ne 0 ] && grep -Eq "$REFUSAL" <<<"$out"
}

if [ "$EXPECT" = refusal ]; then
  status=pass
  {
    cd "$ROOT"
    refused --group compat-old describe --topic compat-old || status=fail
    refused --group compat-old reset --topic compat-old --to-valid --execute || status=fail
  } >"$LOG" 2>&1 || status=fail
  result "$status" - "Kafka $KAFKA_VERSION refused as expected: $(head -n 1 "$LOG" | sed 's/.*exit [0-9]*: //' | tr '|' '/')"
  [ "$status" = pass ] || result fail - "not refused as expected (see $LOG): $(tr '\n|' ' /' <"$LOG")"
  log "$CELL: $status (refusal of an old broker); log in $LOG"
  [ "$status" = pass ]
  exit
fi

status=pass
{
  cd "$ROOT"
  cargo test --no-fail-fast -p offsetkeeper "${CORE_TESTS[@]}" -- "${SKIP[@]}" || status=fail
  cargo test --no-fail-fast -p offsetkeeper-cli "${CLI_TESTS[@]}" -- --nocapture "${SKIP[@]}" || status=fail
} >"$LOG" 2>&1 || status=fail

loads=$(grep -o 'loads: [0-9]* of [0-9]*' "$LOG" | tail -n 1 | sed 's/^loads: //') || true
passed=$(grep -o '^test result: [a-zA-Z]*\. [0-9]* passed; [0-9]* failed' "$LOG" |
  awk '{p += $4; f += $6} END {printf "%d passed, %d failed", p, f}') || true
failed=$(grep -o '^test [^ ]* \.\.\. FAILED' "$LOG" | awk '{print $2}' | tr '\n' ' ') || true
note="$passed${failed:+; failed: $failed}"
result "$status" "${loads:--}" "$note"
log "$CELL: $status ($note; loads ${loads:--}; $((SECONDS - START)) s); log in $LOG"
[ "$status" = pass ]
