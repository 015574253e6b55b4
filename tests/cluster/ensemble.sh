#!/usr/bin/env bash
# ZooKeeper 3.8 ensembles on 127.0.0.1 for fault-injection tests: N plain `java` servers
# (N = 1 is a standalone server) launched from the classpath file cluster.sh uses, all state
# under one DIR. Nodes are numbered 1..N.
#
#   ensemble.sh start DIR N          fresh ensemble: free ports, empty data; waits until every
#                                    node serves; writes DIR/ensemble.env (OFFSETKEEPER_ZK=...)
#   ensemble.sh stop DIR             stop every node (a frozen one is thawed first)
#   ensemble.sh status DIR           which nodes run, and their mode
#   ensemble.sh stop-node DIR I      SIGTERM node I, wait until it is gone
#   ensemble.sh kill-node DIR I      SIGKILL node I (a crash)
#   ensemble.sh start-node DIR I     start node I again (same ports and data); waits until it
#                                    serves, which needs a quorum
#   ensemble.sh freeze DIR I         SIGSTOP node I (a stalled server)
#   ensemble.sh thaw DIR I           SIGCONT node I
#   ensemble.sh pid DIR I            print node I's pid
#
# Env: OFFSETKEEPER_CLUSTER_CLASSPATH  file holding a ':'-separated classpath
#                                      (default <repo>/build/cluster/classpath.txt)
#      OFFSETKEEPER_ZK_CLASSPATH       the same, taken first (another ZooKeeper version: tests/compat)
#      OFFSETKEEPER_CLUSTER_TIMEOUT    seconds to wait for a node to serve (default 90)
#      OFFSETKEEPER_ZK_TICK_MS         ZooKeeper tickTime (default 1000: sessions of 2..20 s)
#      JAVA_HOME                       JVM to use (default: java on PATH)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF=ensemble.sh
# shellcheck source=tests/cluster/lib.sh
. "$HERE/lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)
CLASSPATH_FILE=${OFFSETKEEPER_ZK_CLASSPATH:-${OFFSETKEEPER_CLUSTER_CLASSPATH:-$ROOT/build/cluster/classpath.txt}}
TIMEOUT=${OFFSETKEEPER_CLUSTER_TIMEOUT:-90}
TICK=${OFFSETKEEPER_ZK_TICK_MS:-1000}
STOP_TIMEOUT=30
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
NODE_ROLE=zk # node I runs as role zkI: DIR/zkI.pid, DIR/logs/zkI.out, DIR/zkI/

usage="usage: ensemble.sh start DIR N | stop|status DIR | stop-node|kill-node|start-node|freeze|thaw|pid DIR I"
[ $# -ge 2 ] || die "$usage"
CMD=$1
[ "$CMD" != start ] || mkdir -p "$2"
if [ ! -d "$2" ]; then
  [ "$CMD" != stop ] || exit 0
  die "no ensemble directory $2"
fi
DIR=$(cd "$2" && pwd)
command -v python3 >/dev/null || die "python3 is needed for the port and readiness probes"
PORTS_FILE=$DIR/ensemble.ports
PORTS_MISSING="no ensemble configured in $DIR; run 'ensemble.sh start $DIR N' first"

client_port() { local v="CLIENT_$1"; echo "${!v}"; }

start_node() {
  local i=$1 deadline
  check_node "$i"
  ! pid_of "zk$i" >/dev/null || die "node $i of $DIR is already running"
  [ -s "$CLASSPATH_FILE" ] || die "classpath file $CLASSPATH_FILE is missing; run 'gradle clusterClasspath'"
  local cp main
  cp=$(tr -d '\n' <"$CLASSPATH_FILE")
  main=org.apache.zookeeper.server.quorum.QuorumPeerMain
  [ "$NODES" -gt 1 ] || main=org.apache.zookeeper.server.ZooKeeperServerMain
  spawn "zk$i" -Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Djava.awt.headless=true -Dzookeeper.jmx.log4j.disable=true \
    "-Dlog4j.configuration=file:$HERE/log4j.properties" \
    "-Doffsetkeeper.log.file=$DIR/logs/zk$i.log" \
    -cp "$cp" "$main" "$DIR/zk$i/zoo.cfg"
  deadline=$((SECONDS + TIMEOUT))
  until probe zk-serving "127.0.0.1:$(client_port "$i")"; do
    pid_of "zk$i" >/dev/null || { tail -n 30 "$DIR/logs/zk$i.out" >&2 || true; die "node $i exited before serving"; }
    [ "$SECONDS" -lt "$deadline" ] || die "node $i does not serve after ${TIMEOUT}s (no quorum?)"
    sleep 0.3
  done
  log "node $i serves on 127.0.0.1:$(client_port "$i")"
}

signal_node() {
  local i=$1 sig=$2 pid
  check_node "$i"
  pid=$(pid_of "zk$i") || die "node $i of $DIR is not running"
  kill "-$sig" "$pid"
}

stop_node() {
  local i=$1 pid n
  pid=$(pid_of "zk$i") || { rm -f "$DIR/zk$i.pid"; return 0; }
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for ((n = 0; n < STOP_TIMEOUT * 10; n++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$DIR/zk$i.pid"
}

configure() {
  local n=$1 ports i servers=""
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 7 ] || die "N must be 1..7, not '$n'"
  rm -rf "$DIR"/zk* "$DIR/logs" "$DIR/ensemble.env" "$DIR/ensemble.ports"
  ports=($(probe free-ports $((3 * n)))) || die "could not find free loopback ports"
  {
    echo "NODES=$n"
    for ((i = 1; i <= n; i++)); do echo "CLIENT_$i=${ports[$((3 * (i - 1)))]}"; done
  } >"$DIR/ensemble.ports"
  for ((i = 1; i <= n; i++)); do
    servers+="server.$i=127.0.0.1:${ports[$((3 * (i - 1) + 1))]}:${ports[$((3 * (i - 1) + 2))]}"$'\n'
  done
  for ((i = 1; i <= n; i++)); do
    mkdir -p "$DIR/zk$i/data"
    cat >"$DIR/zk$i/zoo.cfg" <<CFG
tickTime=$TICK
initLimit=10
syncLimit=5
dataDir=$DIR/zk$i/data
clientPort=${ports[$((3 * (i - 1)))]}
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
CFG
    if [ "$n" -gt 1 ]; then
      echo "$i" >"$DIR/zk$i/data/myid"
      printf '%s' "$servers" >>"$DIR/zk$i/zoo.cfg"
    fi
  done
}

# A failed start must not leave nodes behind.
cleanup_on_failure() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$CMD" = start ] && [ -f "$DIR/ensemble.ports" ]; then
    load_ports
    for ((i = 1; i <= NODES; i++)); do stop_node "$i"; done
  fi
}
trap cleanup_on_failure EXIT

case $CMD in
  start)
    [ $# -eq 3 ] || die "$usage"
    if [ -f "$DIR/ensemble.ports" ]; then
      load_ports
      for ((i = 1; i <= NODES; i++)); do stop_node "$i"; done
    fi
    configure "$3"
    load_ports
    # Quorum nodes wait for each other: launch them all, then wait for each to serve.
    starters=()
    for ((i = 1; i <= NODES; i++)); do
      start_node "$i" &
      starters+=($!)
    done
    failed=0
    for starter in "${starters[@]}"; do wait "$starter" || failed=1; done
    [ "$failed" -eq 0 ] || die "not every node came up"
    connect=""
    for ((i = 1; i <= NODES; i++)); do connect+="${connect:+,}127.0.0.1:$(client_port "$i")"; done
    echo "OFFSETKEEPER_ZK=$connect" >"$DIR/ensemble.env.tmp"
    mv "$DIR/ensemble.env.tmp" "$DIR/ensemble.env"
    log "ensemble of $NODES ready: $connect"
    ;;
  stop)
    [ -f "$DIR/ensemble.ports" ] || exit 0
    load_ports
    for ((i = 1; i <= NODES; i++)); do stop_node "$i"; done
    ;;
  status)
    load_ports
    for ((i = 1; i <= NODES; i++)); do
      if p=$(pid_of "zk$i"); then
        mode=$(python3 -c "import sys; sys.path.insert(0, '$HERE'); import probe; print(next((l for l in probe.four_letter('127.0.0.1:$(client_port "$i")', 'srvr').splitlines() if l.startswith('Mode')), 'not serving'))" 2>/dev/null || echo "no answer")
        echo "node $i running (pid $p): $mode"
      else
        echo "node $i stopped"
      fi
    done
    ;;
  stop-node) [ $# -eq 3 ] || die "$usage"; check_node "$3"; stop_node "$3" ;;
  kill-node) [ $# -eq 3 ] || die "$usage"; kill_node "$3" ;;
  start-node) [ $# -eq 3 ] || die "$usage"; start_node "$3" ;;
  freeze) [ $# -eq 3 ] || die "$usage"; signal_node "$3" STOP ;;
  thaw) [ $# -eq 3 ] || die "$usage"; signal_node "$3" CONT ;;
  pid) [ $# -eq 3 ] || die "$usage"; check_node "$3"; pid_of "zk$3" ;;
  *) die "unknown command '$CMD'; $usage" ;;
esac
