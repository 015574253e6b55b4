#!/usr/bin/env bash
# Apache Kafka 4.x KRaft clusters on 127.0.0.1: N combined broker+controller nodes (no
# ZooKeeper), plain `java` processes launched from a resolved classpath file, all state under
# one DIR. Nodes are numbered 1..N (node.id = I); the controller quorum is all N nodes.
#
#   kraft.sh start DIR N          fresh cluster: free ports, a new cluster id, formatted storage;
#                                 waits until every node answers Metadata listing N brokers;
#                                 writes DIR/kraft.env (OFFSETKEEPER_BOOTSTRAP=..., KRAFT_NODE_<I>_PORT=...)
#   kraft.sh stop DIR             stop every node (data is kept)
#   kraft.sh status DIR           which nodes run
#   kraft.sh stop-node DIR I      SIGTERM node I, wait until it is gone
#   kraft.sh kill-node DIR I      SIGKILL node I (a crash)
#   kraft.sh start-node DIR I     start node I again (same ports and data); waits until it serves
#                                 and lists itself among the brokers
#   kraft.sh pid DIR I            print node I's pid
#
# Env: OFFSETKEEPER_KRAFT_CLASSPATH  file holding a ':'-separated classpath
#                                    (default <repo>/build/kraft/classpath.txt, 'gradle kraftClasspath')
#      OFFSETKEEPER_CLUSTER_TIMEOUT  seconds to wait for a node to serve (default 90)
#      OFFSETKEEPER_KRAFT_BROKER_PROPERTIES
#                                    'key=value' lines (newline-separated; blank and '#' lines
#                                    allowed) appended to every node's server.properties by
#                                    'start', after the defaults, which they override (e.g.
#                                    offsets.retention.minutes=1; default: none); nodes started
#                                    again with start-node keep them
#      JAVA_HOME                     JVM to use (default: java on PATH; Kafka 4 needs 17+)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF=kraft.sh
# shellcheck source=tests/cluster/lib.sh
. "$HERE/lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)
CLASSPATH_FILE=${OFFSETKEEPER_KRAFT_CLASSPATH:-$ROOT/build/kraft/classpath.txt}
TIMEOUT=${OFFSETKEEPER_CLUSTER_TIMEOUT:-90}
BROKER_PROPERTIES=${OFFSETKEEPER_KRAFT_BROKER_PROPERTIES:-}
STOP_TIMEOUT=30
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
NODE_ROLE=kafka # node I runs as role kafkaI: DIR/kafkaI.pid, DIR/logs/kafkaI.out, DIR/kafkaI/

usage="usage: kraft.sh start DIR N | stop|status DIR | stop-node|kill-node|start-node|pid DIR I"
[ $# -ge 2 ] || die "$usage"
CMD=$1
[ "$CMD" != start ] || mkdir -p "$2"
if [ ! -d "$2" ]; then
  [ "$CMD" != stop ] || exit 0 # nothing was ever started there
  die "no cluster directory $2"
fi
DIR=$(cd "$2" && pwd)
command -v python3 >/dev/null || die "python3 is needed for the port and readiness probes"
PORTS_FILE=$DIR/kraft.ports
PORTS_MISSING="no KRaft cluster configured in $DIR; run 'kraft.sh start $DIR N' first"

broker_port() { local v="BROKER_$1"; echo "${!v}"; }

read_classpath() { read_classpath_file "$CLASSPATH_FILE" kraftClasspath; }

# Launch node I; returns once its JVM runs.
launch_node() {
  local i=$1
  check_node "$i"
  ! pid_of "kafka$i" >/dev/null || die "node $i of $DIR is already running"
  read_classpath
  spawn "kafka$i" -Xms64m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true \
    "-Dlog4j2.configurationFile=$HERE/log4j2.properties" \
    "-Doffsetkeeper.log.file=$DIR/logs/kafka$i.log" \
    -cp "$CP" kafka.Kafka "$DIR/kafka$i/server.properties"
}

# wait_node I N: until node I answers Metadata listing at least N brokers, itself among them.
wait_node() {
  local i=$1 n=$2 deadline=$((SECONDS + TIMEOUT))
  until probe kafka-brokers "127.0.0.1:$(broker_port "$i")" "$n" "$i"; do
    pid_of "kafka$i" >/dev/null || { tail_logs "kafka$i"; die "node $i exited before serving"; }
    [ "$SECONDS" -lt "$deadline" ] || { tail_logs "kafka$i"; die "node $i does not serve $n brokers after ${TIMEOUT}s (no quorum?)"; }
    sleep 0.5
  done
}

stop_nodes() {
  local i pid n pids=()
  for i in "$@"; do
    pid=$(pid_of "kafka$i") || { rm -f "$DIR/kafka$i.pid"; continue; }
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$i:$pid")
  done
  # All at once: a node stopped last would otherwise wait for a controller quorum that is gone.
  for entry in ${pids[@]+"${pids[@]}"}; do
    i=${entry%%:*} pid=${entry#*:}
    for ((n = 0; n < STOP_TIMEOUT * 10; n++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "node $i (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    rm -f "$DIR/kafka$i.pid"
    log "stopped node $i"
  done
}

all_nodes() { seq 1 "$NODES"; }

# Dies unless every line of OFFSETKEEPER_KRAFT_BROKER_PROPERTIES is key=value, blank or a
# comment: a typo fails the start here rather than as a broker that ignores the line.
check_broker_properties() {
  local line
  while IFS= read -r line; do
    case $line in
      '' | '#'*) ;;
      [!=]*=*) ;;
      *) die "OFFSETKEEPER_KRAFT_BROKER_PROPERTIES: '$line' is not a key=value line" ;;
    esac
  done <<<"$BROKER_PROPERTIES"
}

# Fresh ports, configs, a new cluster id and formatted storage.
configure() {
  local n=$1 ports i voters="" rf cluster_id
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 9 ] || die "N must be 1..9, not '$n'"
  rm -rf "$DIR"/kafka* "$DIR/logs" "$DIR/kraft.env" "$DIR/kraft.ports"
  mkdir -p "$DIR/logs"
  ports=($(probe free-ports $((2 * n)))) || die "could not find free loopback ports"
  {
    echo "NODES=$n"
    for ((i = 1; i <= n; i++)); do
      echo "BROKER_$i=${ports[$((2 * (i - 1)))]}"
      echo "CONTROLLER_$i=${ports[$((2 * (i - 1) + 1))]}"
    done
  } >"$DIR/kraft.ports"
  for ((i = 1; i <= n; i++)); do
    voters+="${voters:+,}$i@127.0.0.1:${ports[$((2 * (i - 1) + 1))]}"
  done
  rf=$((n < 3 ? n : 3))
  # A cluster id is 16 random bytes, URL-safe base64 without padding (what random-uuid prints),
  # and, as Kafka's Uuid.randomUuid() makes sure, not starting with '-': the storage tool would
  # take such an id (one in 64) for an option and fail.
  cluster_id=$(python3 -c 'import base64, uuid
while (id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
    pass
print(id)')
  for ((i = 1; i <= n; i++)); do
    mkdir -p "$DIR/kafka$i/data"
    cat >"$DIR/kafka$i/server.properties" <<CFG
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:${ports[$((2 * (i - 1)))]},CONTROLLER://127.0.0.1:${ports[$((2 * (i - 1) + 1))]}
advertised.listeners=PLAINTEXT://127.0.0.1:${ports[$((2 * (i - 1)))]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DIR/kafka$i/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=1
auto.create.topics.enable=false
delete.topic.enable=true
offsets.topic.replication.factor=$rf
# One partition instead of 50: the group coordinator comes up in well under a second.
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
# Retention tests should not wait minutes for the cleaner thread.
log.initial.task.delay.ms=0
log.retention.check.interval.ms=1000
CFG
    if [ -n "$BROKER_PROPERTIES" ]; then
      # Last: a key given again here overrides the default above (Java properties, last wins).
      printf '# OFFSETKEEPER_KRAFT_BROKER_PROPERTIES\n%s\n' "$BROKER_PROPERTIES" >>"$DIR/kafka$i/server.properties"
    fi
    "$JAVA" "-Dlog4j2.configurationFile=$HERE/log4j2.properties" \
      "-Doffsetkeeper.log.file=$DIR/logs/format$i.log" -cp "$CP" kafka.tools.StorageTool \
      format -t "$cluster_id" -c "$DIR/kafka$i/server.properties" >>"$DIR/logs/format$i.out" 2>&1 ||
      { tail_logs "format$i"; die "could not format the storage of node $i"; }
  done
  echo "$cluster_id" >"$DIR/cluster.id"
}

# A failed start must not leave nodes behind.
cleanup_on_failure() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$CMD" = start ] && [ -f "$DIR/kraft.ports" ]; then
    load_ports
    stop_nodes $(all_nodes)
  fi
}
trap cleanup_on_failure EXIT

case $CMD in
  start)
    [ $# -eq 3 ] || die "$usage"
    check_broker_properties
    if [ -f "$DIR/kraft.ports" ]; then
      load_ports
      stop_nodes $(all_nodes)
    fi
    read_classpath
    configure "$3"
    load_ports
    # The controllers wait for each other's votes: launch them all, then wait for each.
    for i in $(all_nodes); do launch_node "$i"; done
    for i in $(all_nodes); do wait_node "$i" "$NODES"; done
    bootstrap=""
    for i in $(all_nodes); do bootstrap+="${bootstrap:+,}127.0.0.1:$(broker_port "$i")"; done
    {
      echo "OFFSETKEEPER_BOOTSTRAP=$bootstrap"
      for i in $(all_nodes); do echo "KRAFT_NODE_${i}_PORT=$(broker_port "$i")"; done
    } >"$DIR/kraft.env.tmp"
    mv "$DIR/kraft.env.tmp" "$DIR/kraft.env"
    log "KRaft cluster of $NODES ready: $bootstrap"
    ;;
  stop)
    [ -f "$DIR/kraft.ports" ] || exit 0
    load_ports
    stop_nodes $(all_nodes)
    ;;
  status)
    load_ports
    for i in $(all_nodes); do
      if p=$(pid_of "kafka$i"); then
        if probe kafka-brokers "127.0.0.1:$(broker_port "$i")" 1 "$i"; then s=serving; else s="not serving"; fi
        echo "node $i running (pid $p) on 127.0.0.1:$(broker_port "$i"): $s"
      else
        echo "node $i stopped"
      fi
    done
    ;;
  stop-node) [ $# -eq 3 ] || die "$usage"; check_node "$3"; stop_nodes "$3" ;;
  kill-node) [ $# -eq 3 ] || die "$usage"; kill_node "$3" ;;
  start-node)
    [ $# -eq 3 ] || die "$usage"
    launch_node "$3"
    wait_node "$3" 1
    log "node $3 serves on 127.0.0.1:$(broker_port "$3")"
    ;;
  pid) [ $# -eq 3 ] || die "$usage"; check_node "$3"; pid_of "kafka$3" ;;
  *) die "unknown command '$CMD'; $usage" ;;
esac
