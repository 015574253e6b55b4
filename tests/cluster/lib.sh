# shellcheck shell=bash
# Helpers shared by the shell scripts under tests/: the server scripts of this folder
# (cluster.sh, ensemble.sh, kraft.sh) and the scripts that drive them or run against them.
# Sourced, never run; it sets no shell options and no traps, and prints nothing.
#
# What the caller sets (read when a helper runs, not when this file is sourced):
#   SELF           the name messages start with (default: the script's file name)
#   DIR            the server directory: pid files, logs/, the ports file (server helpers)
#   PORTS_FILE     that directory's ports file, and PORTS_MISSING, what to say without it
#                  (load_ports, check_node, kill_node)
#   NODE_ROLE      the role prefix of a numbered node: node I runs as role NODE_ROLE<I> (kill_node)
#   JAVA           the java to launch (spawn)
#
# Servers are identified by role (zk, kafka, kafka1, zk2, ...): DIR/ROLE.pid holds the pid,
# DIR/logs/ROLE.out the JVM's output, and the JVM's command line carries
# -Doffsetkeeper.cluster=DIR:ROLE so that pid_of can tell it from an unrelated process.

LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Everything goes to stderr: some callers print a result on stdout (java-for.sh prints a path).
log() { echo "${SELF:-${0##*/}}: $*" >&2; }
die() { log "$@"; exit 1; }

# The port and readiness probes (probe.py beside this file).
probe() { python3 "$LIB_DIR/probe.py" "$@"; }

# pid_of ROLE: the pid of DIR's server ROLE, if it runs. The command line carries DIR and the
# role, so a stale pid file whose pid was reused by another process is not mistaken for ours.
# (No `tr | grep -q` pipe: grep -q quits early, tr gets SIGPIPE, and pipefail says "no".)
pid_of() {
  local pid args
  pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
  args=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  grep -qxF -- "-Doffsetkeeper.cluster=$DIR:$1" <<<"$args" || return 1
  echo "$pid"
}

# load_ports: the variables of PORTS_FILE (ports, and NODES where there are numbered nodes).
load_ports() {
  [ -f "$PORTS_FILE" ] || die "$PORTS_MISSING"
  # shellcheck source=/dev/null
  . "$PORTS_FILE"
}

# check_node I: dies unless I is one of the nodes 1..NODES of PORTS_FILE.
check_node() {
  load_ports
  # shellcheck disable=SC2154 # NODES comes from PORTS_FILE
  [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$NODES" ] || die "no node '$1'; nodes are 1..$NODES"
}

# kill_node I: SIGKILL node I (a crash); returns once it is gone.
kill_node() {
  local i=$1 pid
  check_node "$i"
  pid=$(pid_of "$NODE_ROLE$i") || die "node $i of $DIR is not running"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f "$DIR/$NODE_ROLE$i.pid"
}

# read_classpath_file FILE TASK: CP from FILE, a ':'-separated classpath that `gradle TASK`
# writes. Dies when FILE is missing or empty, or its first jar is missing (a cleaned Gradle
# cache), rather than letting a JVM fail later with a less telling error.
read_classpath_file() {
  [ -f "$1" ] && [ -s "$1" ] || die "classpath file $1 is missing or empty; run 'gradle $2'"
  CP=$(tr -d '\n' <"$1") || die "cannot read the classpath file $1"
  [ -f "${CP%%:*}" ] || die "classpath in $1 points at missing jars; run 'gradle $2'"
}

# The last lines of ROLE's logs (log4j's file and the JVM's output), on stderr, for a server
# that failed.
tail_logs() {
  local f
  for f in "$DIR/logs/$1.log" "$DIR/logs/$1.out"; do
    [ -s "$f" ] && { echo "----- tail of $f" >&2; tail -n 40 "$f" >&2; }
  done
  return 0
}

# spawn ROLE JVM-ARGS...: starts JAVA as server ROLE, detached (setsid, no inherited fds) so that
# callers like Gradle's Exec, which wait for stdout to close, return at once; output appends to
# DIR/logs/ROLE.out, the pid goes to DIR/ROLE.pid. Returns once pid_of recognises the JVM:
# until the forked shell has exec'ed java, polling would report the server as dead.
spawn() {
  local role=$1 pid
  shift
  mkdir -p "$DIR/logs"
  setsid "$JAVA" "-Doffsetkeeper.cluster=$DIR:$role" "$@" </dev/null >>"$DIR/logs/$role.out" 2>&1 &
  pid=$!
  echo "$pid" >"$DIR/$role.pid"
  while ! pid_of "$role" >/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}
