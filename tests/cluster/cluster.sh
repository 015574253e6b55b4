#!/usr/bin/env bash
# A real ZooKeeper 3.8 + Kafka 3.9 (ZooKeeper mode) test cluster on 127.0.0.1: two plain
# `java` processes launched from a resolved classpath file, all state under one DIR.
#
#   cluster.sh start DIR         fresh cluster: new free ports, empty data, writes DIR/cluster.env
#   cluster.sh stop DIR          stop Kafka, then ZooKeeper (data is kept)
#   cluster.sh status DIR        print which servers run
#   cluster.sh stop-kafka|start-kafka|stop-zk|start-zk DIR
#                                one server only, same ports and data (for fault tests)
#
# Env: OFFSETKEEPER_CLUSTER_CLASSPATH  file holding a ':'-separated classpath
#                                      (default <repo>/build/cluster/classpath.txt)
#      OFFSETKEEPER_CLUSTER_TIMEOUT    seconds to wait for a server to come up (default 90)
#      JAVA_HOME                       JVM to use (default: java on PATH)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CLASSPATH_FILE=${OFFSETKEEPER_CLUSTER_CLASSPATH:-$ROOT/build/cluster/classpath.txt}
TIMEOUT=${OFFSETKEEPER_CLUSTER_TIMEOUT:-90}
STOP_TIMEOUT=30
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
BROKER_ID=0

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { echo "cluster.sh: $*" >&2; }
probe() { python3 "$HERE/probe.py" "$@"; }

[ $# -eq 2 ] || die "usage: cluster.sh start|stop|status|start-kafka|stop-kafka|start-zk|stop-zk DIR"
CMD=$1
[ "$CMD" != start ] || mkdir -p "$2"
if [ ! -d "$2" ]; then
  [ "$CMD" != stop ] || exit 0 # nothing was ever started there
  die "no cluster directory $2"
fi
DIR=$(cd "$2" && pwd)
command -v python3 >/dev/null || die "python3 is needed for the port and readiness probes"

# Pid of a running server of this DIR. The command line carries DIR and the role,
# so a stale pid file whose pid was reused by another process is not mistaken for ours.
# (No `tr | grep -q` pipe: grep -q quits early, tr gets SIGPIPE, and pipefail says "no".)
pid_of() {
  local pid args
  pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
  args=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  grep -qxF -- "-Doffsetkeeper.cluster=$DIR:$1" <<<"$args" || return 1
  echo "$pid"
}

load_ports() {
  [ -f "$DIR/ports.env" ] || die "no cluster configured in $DIR; run 'cluster.sh start $DIR' first"
  # shellcheck source=/dev/null
  . "$DIR/ports.env"
}

read_classpath() {
  [ -s "$CLASSPATH_FILE" ] || die "classpath file $CLASSPATH_FILE is missing; run 'gradle clusterClasspath'"
  CP=$(tr -d '\n' <"$CLASSPATH_FILE")
  [ -f "${CP%%:*}" ] || die "classpath in $CLASSPATH_FILE points at missing jars; run 'gradle clusterClasspath'"
}

tail_logs() {
  local f
  for f in "$DIR/logs/$1.log" "$DIR/logs/$1.out"; do
    [ -s "$f" ] && { echo "----- tail of $f" >&2; tail -n 40 "$f" >&2; }
  done
  return 0
}

# launch ROLE HEAP MAIN ARGS...: detached (setsid, no inherited fds) so that callers
# like Gradle's Exec, which wait for stdout to close, return at once.
launch() {
  local role=$1 heap=$2
  shift 2
  mkdir -p "$DIR/logs"
  setsid "$JAVA" -Xms64m "-Xmx$heap" -XX:+UseG1GC -Djava.awt.headless=true \
    "-Doffsetkeeper.cluster=$DIR:$role" \
    "-Dlog4j.configuration=file:$HERE/log4j.properties" \
    "-Doffsetkeeper.log.file=$DIR/logs/$role.log" \
    -cp "$CP" "$@" </dev/null >>"$DIR/logs/$role.out" 2>&1 &
  local pid=$!
  echo "$pid" >"$DIR/$role.pid"
  STARTED+=("$role")
  # Until the forked shell has exec'ed java, pid_of does not recognise it; polling before
  # then would report the server as dead.
  while ! pid_of "$role" >/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  DEADLINE=$((SECONDS + TIMEOUT))
}

# wait_for ROLE WHAT PROBE-ARGS...: poll until the probe passes or $DEADLINE (one budget
# per server start); fail early if the JVM died.
wait_for() {
  local role=$1 what=$2
  shift 2
  until probe "$@"; do
    if ! pid_of "$role" >/dev/null; then
      tail_logs "$role"
      die "$role exited before $what"
    fi
    if [ "$SECONDS" -ge "$DEADLINE" ]; then
      tail_logs "$role"
      die "$role: no $what after ${TIMEOUT}s"
    fi
    sleep 0.5
  done
}

stop_role() {
  local role=$1 pid i
  if ! pid=$(pid_of "$role"); then
    rm -f "$DIR/$role.pid"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$role (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$DIR/$role.pid"
  log "stopped $role"
}

start_zk() {
  load_ports
  ! pid_of zk >/dev/null || die "ZooKeeper of $DIR is already running"
  read_classpath
  launch zk 256m -Dzookeeper.jmx.log4j.disable=true \
    org.apache.zookeeper.server.ZooKeeperServerMain "$DIR/zk/zoo.cfg"
  wait_for zk "ruok answer on 127.0.0.1:$ZK_PORT" zk-ok "127.0.0.1:$ZK_PORT"
  log "ZooKeeper up on 127.0.0.1:$ZK_PORT"
}

start_kafka() {
  load_ports
  ! pid_of kafka >/dev/null || die "Kafka of $DIR is already running"
  probe zk-ok "127.0.0.1:$ZK_PORT" || die "ZooKeeper of $DIR is not answering; start it first"
  read_classpath
  # A broker stopped while ZooKeeper was down could not close its session, so its
  # /brokers/ids entry lingers until the session expires, and Kafka refuses to start.
  DEADLINE=$((SECONDS + TIMEOUT))
  if probe zk-ephemeral "127.0.0.1:$ZK_PORT" "/brokers/ids/$BROKER_ID"; then
    log "waiting for the previous broker's ZooKeeper session to expire"
    while probe zk-ephemeral "127.0.0.1:$ZK_PORT" "/brokers/ids/$BROKER_ID"; do
      [ "$SECONDS" -lt "$DEADLINE" ] || die "stale /brokers/ids/$BROKER_ID did not expire in ${TIMEOUT}s"
      sleep 0.5
    done
  fi
  launch kafka 512m kafka.Kafka "$DIR/kafka/server.properties"
  wait_for kafka "registration /brokers/ids/$BROKER_ID" \
    zk-ephemeral "127.0.0.1:$ZK_PORT" "/brokers/ids/$BROKER_ID"
  wait_for kafka "metadata answer on 127.0.0.1:$KAFKA_PORT" \
    kafka-ready "127.0.0.1:$KAFKA_PORT" "$BROKER_ID"
  log "Kafka up on 127.0.0.1:$KAFKA_PORT"
}

# Fresh ports, configs and empty data dirs; DIR's other files (classpath.txt) are left alone.
configure() {
  local ports
  rm -rf "$DIR/zk" "$DIR/kafka" "$DIR/logs" "$DIR/cluster.env" "$DIR/ports.env"
  mkdir -p "$DIR/zk/data" "$DIR/kafka/data" "$DIR/logs"
  ports=$(probe free-ports 2) || die "could not find free loopback ports"
  ZK_PORT=${ports% *} KAFKA_PORT=${ports#* }
  printf 'ZK_PORT=%s\nKAFKA_PORT=%s\n' "$ZK_PORT" "$KAFKA_PORT" >"$DIR/ports.env"
  cat >"$DIR/zk/zoo.cfg" <<EOF
tickTime=2000
dataDir=$DIR/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
EOF
  cat >"$DIR/kafka/server.properties" <<EOF
broker.id=$BROKER_ID
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
zookeeper.connect=127.0.0.1:$ZK_PORT
# 6 s instead of 18 s: after a broker dies without closing its session, the restart
# waits for that session to expire (the server allows 2..20 ticks of 2 s).
zookeeper.session.timeout.ms=6000
log.dirs=$DIR/kafka/data
num.partitions=1
auto.create.topics.enable=false
delete.topic.enable=true
offsets.topic.replication.factor=1
# One partition instead of 50: the group coordinator comes up in well under a second.
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
# Retention tests should not wait minutes for the cleaner thread.
log.initial.task.delay.ms=0
log.retention.check.interval.ms=1000
# A lone broker has no one to hand leadership to, and controlled shutdown
# would block the stop while ZooKeeper is down in fault tests.
controlled.shutdown.enable=false
EOF
}

# A failed start must not leave half a cluster behind (Gradle then never runs clusterStop).
STARTED=()
cleanup() {
  local r
  for r in kafka zk; do
    [[ " ${STARTED[*]} " != *" $r "* ]] || stop_role "$r"
  done
}
trap 'rc=$?; [ $rc -eq 0 ] || cleanup' EXIT

case $CMD in
  start)
    if pid_of kafka >/dev/null || pid_of zk >/dev/null; then
      log "a cluster is still running from $DIR; restarting it fresh"
      stop_role kafka
      stop_role zk
    fi
    read_classpath
    configure
    start_zk
    start_kafka
    printf 'OFFSETKEEPER_ZK=127.0.0.1:%s\nOFFSETKEEPER_BOOTSTRAP=127.0.0.1:%s\n' \
      "$ZK_PORT" "$KAFKA_PORT" >"$DIR/cluster.env.tmp"
    mv "$DIR/cluster.env.tmp" "$DIR/cluster.env"
    log "cluster ready; env in $DIR/cluster.env"
    ;;
  stop)
    stop_role kafka
    stop_role zk
    ;;
  status)
    for r in zk kafka; do
      if p=$(pid_of "$r"); then echo "$r running (pid $p)"; else echo "$r stopped"; fi
    done
    ;;
  start-zk) start_zk ;;
  start-kafka) start_kafka ;;
  stop-zk) stop_role zk ;;
  stop-kafka) stop_role kafka ;;
  *) die "unknown command '$CMD'" ;;
esac
