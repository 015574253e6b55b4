#!/usr/bin/env bash
# The README's quick-start job (examples/scala/QuickStartJob.scala) submitted by spark-submit to a
# real Spark standalone cluster, a Master and one Worker on loopback run from the pyspark package
# (venv.sh beside this file), against the test cluster's ZooKeeper and Kafka:
#
#   client mode   offsetkeeper by its coordinates from build/repo (--packages, as a user's
#                 repository manager serves it); the driver is spark-submit's JVM. It is
#                 SIGKILLed after its first commits and more records, submitted again, then
#                 stopped by SIGTERM just after more records (README: the last batch commits).
#   cluster mode  --jars offsetkeeper_2.12-<version>.jar and the connector's jars (in cluster mode
#                 --packages reaches the driver alone; see connector_jars); the driver runs on the worker. It is killed through the master
#                 (deploy.Client kill), submitted again, and killed again.
#   Kerberos cluster mode (with --kerberos-env)
#                 cluster mode's runs against the Kerberos cluster, as docs/security.md tells a
#                 user of a Kerberized cluster: KerberosClickCount.java beside this file (SASL_SSL,
#                 GSSAPI, a JKS truststore); a JAAS file (Client, KafkaClient) naming the keytab
#                 relatively, the keytab and the truststore by --files (a standalone driver gets
#                 them in its SparkFiles directory only: the job copies them into its working
#                 directory); the JAAS file and krb5.conf by the driver's and the executors' Java
#                 options. Records go in through the broker's PLAINTEXT listener; describe logs in
#                 with the cluster's client keytab.
#
# No record lost: after each run the group's stored offsets (the operator CLI's describe) are
# the topic's log ends, and the counts the drivers printed add up to at least the records
# produced (at least once, so more is fine). One summary line per mode; on failure, the reason
# and the tails of the logs (all under the work dir).
#
#   run.sh --spark-home DIR --java-home DIR --cluster-env FILE --jar FILE --repo DIR
#          --examples DIR --version V --spark-version V --classpath CP --cli FILE
#          --driver-java-options OPTS --work DIR [--kerberos-env FILE]
#
#   --spark-home     venv.sh's answer: bin/spark-submit, bin/spark-class, jars/
#   --java-home      the JDK for every JVM (Gradle's own)
#   --cluster-env    cluster.env of clusterStart (OFFSETKEEPER_ZK, OFFSETKEEPER_BOOTSTRAP)
#   --kerberos-env   kerberos.env of kerberosClusterStart: adds the Kerberos cluster mode
#   --jar            offsetkeeper_2.12-<version>.jar as :jvm:jar built it
#   --repo           build/repo, the Maven repository of :jvm:publishToBuildRepo
#   --examples       the compiled Scala examples (:e2e:compileExamples), packed into the app jar
#   --version        offsetkeeper's version; --spark-version the connector's (Spark's) version
#   --classpath      kafka-clients and slf4j-api, for Produce.java
#   --cli            the offsetkeeper operator CLI
#   --driver-java-options   the cluster-mode driver's --add-opens (see submit_cluster)
#   --work           the work dir: logs, the worker's dir; its ivy/ cache is kept between runs
#
# Env: OFFSETKEEPER_SPARK_SUBMIT_WAIT   seconds a run may take to commit (default 180; the first
#                                       submission gets 120 more, for the packages' download)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SELF=spark-submit/run.sh
# shellcheck source=tests/cluster/lib.sh
. "$ROOT/tests/cluster/lib.sh"

declare -A OPT=()
while [ $# -gt 0 ]; do
  case $1 in
    --spark-home | --java-home | --cluster-env | --jar | --repo | --examples | --version | \
      --spark-version | --classpath | --cli | --driver-java-options | --work | --kerberos-env)
      [ $# -ge 2 ] || die "$1 needs a value"
      OPT[${1#--}]=$2
      shift 2
      ;;
    *) die "unknown argument '$1' (usage: see the header of $0)" ;;
  esac
done
for name in spark-home java-home cluster-env jar repo examples version spark-version classpath cli \
  driver-java-options work; do
  [ -n "${OPT[$name]:-}" ] || die "--$name is required"
done

GROUP=click-count # QuickStartJob's group.id, and KerberosClickCount's
WAIT=${OFFSETKEEPER_SPARK_SUBMIT_WAIT:-180}
VERSION=${OPT[version]}
SPARK_VERSION=${OPT[spark-version]}
JAR=${OPT[jar]}
CLI=${OPT[cli]}
CONNECTOR=org.apache.spark:spark-streaming-kafka-0-10_2.12:$SPARK_VERSION
export SPARK_HOME=${OPT[spark-home]} JAVA_HOME=${OPT[java-home]}
export SPARK_LOCAL_IP=127.0.0.1 # every Spark JVM binds and advertises loopback
export SPARK_DAEMON_MEMORY=512m # the Master and the Worker
# Nothing from the machine's Spark or Hadoop set-up.
unset HADOOP_CONF_DIR YARN_CONF_DIR SPARK_DIST_CLASSPATH SPARK_SUBMIT_OPTS SPARK_MASTER_OPTS SPARK_WORKER_OPTS

[ -f "${OPT[cluster-env]}" ] || die "${OPT[cluster-env]} is missing; run 'gradle clusterStart'"
# shellcheck source=/dev/null
. "${OPT[cluster-env]}"
: "${OFFSETKEEPER_ZK:?not in ${OPT[cluster-env]}}" "${OFFSETKEEPER_BOOTSTRAP:?not in ${OPT[cluster-env]}}"
[ -x "$SPARK_HOME/bin/spark-submit" ] && [ -x "$SPARK_HOME/bin/spark-class" ] \
  || die "$SPARK_HOME has no bin/spark-submit and bin/spark-class; see venv.sh"
[ -f "$SPARK_HOME/jars/spark-core_2.12-$SPARK_VERSION.jar" ] \
  || die "$SPARK_HOME is not Spark $SPARK_VERSION (no jars/spark-core_2.12-$SPARK_VERSION.jar)"
[ -x "$JAVA_HOME/bin/javac" ] && [ -x "$JAVA_HOME/bin/jar" ] || die "$JAVA_HOME is not a JDK (javac, jar)"
[ -f "$JAR" ] || die "$JAR is missing; run 'gradle :jvm:jar'"
[ -f "${OPT[repo]}/io/offsetkeeper/offsetkeeper_2.12/$VERSION/offsetkeeper_2.12-$VERSION.pom" ] \
  || die "no io.offsetkeeper:offsetkeeper_2.12:$VERSION in ${OPT[repo]}; run 'gradle publishAll'"
[ -f "${OPT[examples]}/QuickStartJob.class" ] || die "no QuickStartJob.class in ${OPT[examples]}; run 'gradle :e2e:compileExamples'"
[ -x "$CLI" ] || die "$CLI is missing; run 'gradle :jvm:cargoBuildCli'"
KERBEROS_ENV=${OPT[kerberos-env]:-}
if [ -n "$KERBEROS_ENV" ]; then
  [ -f "$KERBEROS_ENV" ] || die "$KERBEROS_ENV is missing; run 'gradle kerberosClusterStart'"
  # shellcheck source=/dev/null
  . "$KERBEROS_ENV"
  for name in ZK KAFKA_SASL_SSL KAFKA_PLAINTEXT TRUSTSTORE_JKS TRUSTSTORE_PASSWORD CA KRB5_CONF \
    CLIENT_PRINCIPAL CLIENT_KEYTAB CLIENT_JAAS; do
    name=OFFSETKEEPER_KERBEROS_$name
    [ -n "${!name:-}" ] || die "no $name in $KERBEROS_ENV"
  done
  for name in TRUSTSTORE_JKS CA KRB5_CONF CLIENT_KEYTAB CLIENT_JAAS; do
    name=OFFSETKEEPER_KERBEROS_$name
    [ -f "${!name}" ] || die "${!name} ($name) is missing; run 'gradle kerberosClusterStart'"
  done
fi

# A fresh work dir, but for the Ivy cache of the downloaded packages, less offsetkeeper's
# artifact: a rebuilt jar keeps its version, and Ivy would serve the cached one.
mkdir -p "${OPT[work]}"
WORK=$(cd "${OPT[work]}" && pwd)
# Emptied below: only a folder this script made (its mark) or an empty one.
[ -f "$WORK/.spark-submit-work" ] || [ -z "$(ls -A "$WORK")" ] \
  || die "--work $WORK is neither empty nor a work dir of this script; refusing to empty it"
find "$WORK" -mindepth 1 -maxdepth 1 ! -name ivy -exec rm -rf {} +
touch "$WORK/.spark-submit-work"
IVY=$WORK/ivy
rm -rf "$IVY/cache/io.offsetkeeper" "$IVY"/jars/io.offsetkeeper_*
LOGS=$WORK/logs
mkdir -p "$LOGS" "$WORK/conf" "$WORK/worker" "$WORK/classes"
export SPARK_CONF_DIR=$WORK/conf # empty: Spark's defaults, whatever the package or machine holds

state() { python3 "$HERE/state.py" "$@"; }

# ---- Failure and clean-up ---------------------------------------------------------------------
DIAG=("$LOGS/cli.log") # logs whose tails a failure prints, besides the cluster's
fail() {
  local f
  log "FAILED: $*"
  for f in "${DIAG[@]}" "$LOGS/master.out" "$LOGS/worker.out" "$WORK"/worker/app-*/*/stderr; do
    [ -s "$f" ] && { echo "----- tail of $f" >&2; tail -n 60 "$f" >&2; }
  done
  exit 1
}

MASTER_PID="" WORKER_PID="" CLIENT_PID="" DRIVER_ID="" MASTER=""
# stop_pid PID SECONDS: SIGTERM, then SIGKILL after SECONDS; returns once it is gone.
stop_pid() {
  local pid=$1 i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$?
  set +e
  # A cluster-mode driver still running goes through the master; the Worker's own shutdown
  # kills what it launched, and a driver's graceful stop may take 10 s before its SIGKILL.
  if [ -n "$DRIVER_ID" ]; then
    timeout 60 "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.Client kill "$MASTER" "$DRIVER_ID" \
      >>"$LOGS/kill.log" 2>&1
  fi
  stop_pid "$CLIENT_PID" 60
  stop_pid "$WORKER_PID" 40
  stop_pid "$MASTER_PID" 20
  exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# ---- The Spark standalone cluster -------------------------------------------------------------
ports=$(probe free-ports 3) || die "could not find free loopback ports"
read -r MASTER_PORT MASTER_UI WORKER_UI <<<"$ports"
MASTER=spark://127.0.0.1:$MASTER_PORT
MASTER_JSON=http://127.0.0.1:$MASTER_UI/json/

"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
  --host 127.0.0.1 --port "$MASTER_PORT" --webui-port "$MASTER_UI" </dev/null >"$LOGS/master.out" 2>&1 &
MASTER_PID=$!
deadline=$((SECONDS + 90))
until state workers "$MASTER_JSON" >/dev/null 2>&1; do
  kill -0 "$MASTER_PID" 2>/dev/null || fail "the Spark master exited"
  [ $SECONDS -lt $deadline ] || fail "the Spark master's web UI did not answer within 90 s ($MASTER_JSON)"
  sleep 1
done
# Started once the master answers, so that its first registration goes through.
"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
  --host 127.0.0.1 --cores 2 --memory 2g --webui-port "$WORKER_UI" --work-dir "$WORK/worker" "$MASTER" \
  </dev/null >"$LOGS/worker.out" 2>&1 &
WORKER_PID=$!
deadline=$((SECONDS + 90))
until [ "$(state workers "$MASTER_JSON" 2>/dev/null)" = 1 ]; do
  kill -0 "$WORKER_PID" 2>/dev/null || fail "the Spark worker exited"
  [ $SECONDS -lt $deadline ] || fail "no ALIVE worker at the master within 90 s"
  sleep 1
done
log "Spark $SPARK_VERSION standalone: master $MASTER (UI $MASTER_JSON), one worker (2 cores, 2g)"

# ---- What the submissions need --------------------------------------------------------------
# The cluster that produce, describe and submit_cluster go to: the open one, until
# kerberos_cluster_mode switches them to the Kerberos one.
ZK=$OFFSETKEEPER_ZK BOOTSTRAP=$OFFSETKEEPER_BOOTSTRAP PRODUCE_BOOTSTRAP=$OFFSETKEEPER_BOOTSTRAP
CLI_ENV=() CLI_OPTS=() # describe's environment and options (the Kerberos cluster's login)

# The application jar, as a user's build would make it: the compiled examples.
"$JAVA_HOME/bin/jar" cf "$WORK/app.jar" -C "${OPT[examples]}" . || fail "jar could not pack ${OPT[examples]}"
APP_JAR=$WORK/app.jar

# Compiled once: a single-file launch would compile again at every call.
"$JAVA_HOME/bin/javac" -d "$WORK/classes" -cp "${OPT[classpath]}" "$HERE/Produce.java" 2>"$LOGS/javac.log" \
  || { DIAG+=("$LOGS/javac.log"); fail "Produce.java did not compile"; }
# produce TOPIC COUNT
produce() {
  "$JAVA_HOME/bin/java" -cp "$WORK/classes:${OPT[classpath]}" Produce "$PRODUCE_BOOTSTRAP" "$1" "$2" \
    >>"$LOGS/produce.log" 2>&1 || { DIAG+=("$LOGS/produce.log"); fail "producing $2 records to $1 failed"; }
}

# Ivy resolves from build/repo and Maven Central only. Spark's own chain would look in ~/.m2
# first, where publishToMavenLocal (or another build) may have left an older jar of the same
# version, and in the spark-packages repository, which this network may not reach.
REPO_URL=$(python3 -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).resolve().as_uri())' "${OPT[repo]}")/
IVY_SETTINGS=$WORK/ivysettings.xml
cat >"$IVY_SETTINGS" <<EOF
<ivysettings>
  <settings defaultResolver="offsetkeeper-test"/>
  <resolvers>
    <chain name="offsetkeeper-test" returnFirst="true">
      <ibiblio name="build-repo" root="$REPO_URL" m2compatible="true"/>
      <ibiblio name="central" root="https://repo1.maven.org/maven2/" m2compatible="true"/>
    </chain>
  </resolvers>
</ivysettings>
EOF
SUBMIT_CONF=(--conf "spark.jars.ivy=$IVY" --conf "spark.jars.ivySettings=$IVY_SETTINGS"
  --conf spark.ui.enabled=false) # no driver UI: one port less to collide on

# describe TOPIC: the group's stored offsets of TOPIC, as JSON.
describe() {
  env "${CLI_ENV[@]}" "$CLI" --zookeeper "$ZK" --bootstrap-servers "$BOOTSTRAP" "${CLI_OPTS[@]}" --group "$GROUP" \
    describe --topic "$1" --format json 2>>"$LOGS/cli.log"
}

# wait_committed TOPIC TOTAL SECONDS ALIVE...: waits until the group's stored offsets of TOPIC
# are its log ends and these hold TOTAL records; fails when the command ALIVE... says the
# driver is gone, or after SECONDS.
wait_committed() {
  local topic=$1 total=$2 seconds=$3 seen="" deadline
  shift 3
  deadline=$((SECONDS + seconds))
  while :; do
    if seen=$(describe "$topic" | state offsets "$total"); then
      log "$topic: $seen"
      return 0
    fi
    "$@" || fail "the driver ended before it stored the offsets of all $total records of $topic ($seen)"
    [ $SECONDS -lt $deadline ] || fail "the offsets of all $total records of $topic were not stored within ${seconds} s ($seen)"
    sleep 2
  done
}

# ---- Client mode ------------------------------------------------------------------------------
# submit_client N TOPIC: spark-submit in the background; its JVM is the driver (CLIENT_PID).
submit_client() {
  DIAG+=("$LOGS/client-$1.err" "$LOGS/client-$1.out")
  "$SPARK_HOME/bin/spark-submit" --master "$MASTER" --deploy-mode client --class QuickStartJob \
    --packages "$CONNECTOR,io.offsetkeeper:offsetkeeper_2.12:$VERSION" "${SUBMIT_CONF[@]}" \
    "$APP_JAR" "$OFFSETKEEPER_ZK" "$OFFSETKEEPER_BOOTSTRAP" "$2" \
    </dev/null >"$LOGS/client-$1.out" 2>"$LOGS/client-$1.err" &
  CLIENT_PID=$!
}
client_alive() { kill -0 "$CLIENT_PID" 2>/dev/null; }

client_mode() {
  local topic=spark-submit-client-$RUN started=$SECONDS resolved counted
  produce "$topic" 200
  submit_client 1 "$topic"
  wait_committed "$topic" 200 $((WAIT + 120)) client_alive
  # Ivy's copy is the jar just built: not a stale one from a cache.
  resolved=$IVY/jars/io.offsetkeeper_offsetkeeper_2.12-$VERSION.jar
  [ -f "$resolved" ] || fail "spark-submit --packages left no $resolved"
  cmp -s "$resolved" "$JAR" || fail "spark-submit --packages resolved another jar than $JAR: $resolved"

  # A crash: records arrive, the driver dies at once, and the next one must deliver them.
  produce "$topic" 100
  kill -KILL "$CLIENT_PID" 2>/dev/null || fail "the client-mode driver exited before its SIGKILL"
  wait "$CLIENT_PID" 2>/dev/null || true
  submit_client 2 "$topic"
  wait_committed "$topic" 300 "$WAIT" client_alive

  # A stop: SIGTERM right after records, as ShutdownTest does in local mode.
  produce "$topic" 50
  kill -TERM "$CLIENT_PID" 2>/dev/null || fail "the client-mode driver exited before its SIGTERM"
  local i
  for ((i = 0; i < 600; i++)); do
    client_alive || break
    sleep 0.1
  done
  client_alive && fail "the client-mode driver was still alive 60 s after SIGTERM"
  wait "$CLIENT_PID" 2>/dev/null || true
  CLIENT_PID=""
  seen=$(describe "$topic" | state offsets 350) \
    || fail "after SIGTERM the last batch's offsets were not stored ($seen; README: on SIGTERM the last batch commits)"

  counted=$(state counts "$LOGS/client-1.out" "$LOGS/client-2.out")
  [ "$counted" -ge 350 ] || fail "the drivers printed counts adding up to $counted, fewer than the 350 records produced"
  echo "spark-submit client mode: passed in $((SECONDS - started)) s: 350 records on $topic; the stored" \
    "offsets were the log ends after the first run, after a SIGKILL and a restart, and after a SIGTERM;" \
    "the drivers counted $counted records (>= 350)"
}

# ---- Cluster mode -----------------------------------------------------------------------------
# On a standalone cluster in cluster mode, --packages reaches the driver alone: with the connector
# by --packages, every task failed on the executor with ClassNotFoundException:
# org.apache.spark.streaming.kafka010.KafkaRDDPartition (Spark 3.5.1). So the connector goes by
# --jars, as the README says for clusters without internet: the jars that client mode's --packages
# resolved, less those Spark ships.
connector_jars() {
  local jars=("$IVY/jars/org.apache.spark_spark-streaming-kafka-0-10_2.12-$SPARK_VERSION.jar"
    "$IVY/jars/org.apache.spark_spark-token-provider-kafka-0-10_2.12-$SPARK_VERSION.jar"
    "$IVY"/jars/org.apache.kafka_kafka-clients-*.jar) jar
  for jar in "${jars[@]}"; do
    [ -f "$jar" ] || fail "$jar is missing: client mode's --packages should have resolved it"
  done
  (IFS=,; echo "${jars[*]}")
}

driver_ids() { state drivers "$MASTER_JSON" | cut -d' ' -f1; }

# What submit_cluster submits, set by each cluster mode: MODE names its logs; APP holds
# spark-submit's options for the application, the app jar and the arguments before the topic,
# APP_TAIL those after it.
MODE=cluster APP=() APP_TAIL=()

# submit_cluster N TOPIC: spark-submit --deploy-mode cluster, which returns once the master has
# the driver; sets DRIVER_ID to the driver the master lists anew. The driver's JVM is launched
# by the Worker, and Spark 3.5's launcher adds the --add-opens that Spark needs on JDK 17 only
# to JVMs it starts itself, so they are given as the driver's Java options (those of the e2e's
# drivers; every mode's APP has them); the executors get them from SparkContext.
submit_cluster() {
  local known lines i
  known=" $(driver_ids 2>/dev/null | tr '\n' ' ' || true) "
  DIAG+=("$LOGS/$MODE-submit-$1.log")
  timeout 180 "$SPARK_HOME/bin/spark-submit" --master "$MASTER" --deploy-mode cluster \
    --jars "$JAR,$(connector_jars)" "${SUBMIT_CONF[@]}" "${APP[@]}" "$2" "${APP_TAIL[@]}" \
    </dev/null >"$LOGS/$MODE-submit-$1.log" 2>&1 \
    || fail "spark-submit --deploy-mode cluster exited with status $?"
  DRIVER_ID=""
  for ((i = 0; i < 30; i++)); do
    lines=$(state drivers "$MASTER_JSON" 2>/dev/null) || lines=""
    DRIVER_ID=$(awk -v known="$known" 'index(known, " " $1 " ") == 0 { print $1; exit }' <<<"$lines")
    [ -n "$DRIVER_ID" ] && break
    sleep 1
  done
  [ -n "$DRIVER_ID" ] || fail "the master lists no new driver after spark-submit --deploy-mode cluster"
  DIAG+=("$WORK/worker/$DRIVER_ID/stderr" "$WORK/worker/$DRIVER_ID/stdout")
  log "$MODE mode: driver $DRIVER_ID submitted"
}
# Alive while the master lists it among the active drivers (when the master answers at all).
cluster_alive() {
  local lines
  lines=$(state drivers "$MASTER_JSON" 2>/dev/null) || return 0
  grep -q "^$DRIVER_ID [A-Z]* active\$" <<<"$lines"
}
# kill_driver: the master has the Worker stop DRIVER_ID (SIGTERM, SIGKILL after 10 s); returns
# once the master lists it as completed.
kill_driver() {
  local lines i
  DIAG+=("$LOGS/kill.log")
  timeout 120 "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.Client kill "$MASTER" "$DRIVER_ID" \
    </dev/null >>"$LOGS/kill.log" 2>&1 || log "deploy.Client kill $DRIVER_ID exited with status $?"
  for ((i = 0; i < 60; i++)); do
    lines=$(state drivers "$MASTER_JSON" 2>/dev/null) || lines=""
    if grep -q "^$DRIVER_ID [A-Z]* completed\$" <<<"$lines"; then
      DRIVER_ID=""
      return 0
    fi
    sleep 1
  done
  fail "the master still lists driver $DRIVER_ID as active 60 s after deploy.Client kill"
}

# cluster_runs TOPIC: records, a driver of APP submitted, its commits; more records, the driver
# killed through the master, a second one submitted, its commits, and it killed too. Sets FIRST
# and SECOND (the drivers) and COUNTED (the records their output counted).
cluster_runs() {
  local topic=$1
  produce "$topic" 200
  submit_cluster 1 "$topic"
  FIRST=$DRIVER_ID
  wait_committed "$topic" 200 "$WAIT" cluster_alive

  produce "$topic" 100
  kill_driver
  submit_cluster 2 "$topic"
  SECOND=$DRIVER_ID
  wait_committed "$topic" 300 "$WAIT" cluster_alive
  kill_driver

  # What a driver prints after the master's kill may miss its stdout file (the Worker stops copying
  # the output of a driver it kills): the counts must cover the 200 records committed before the
  # first kill; the 100 after it are shown by the stored offsets alone.
  COUNTED=$(state counts "$WORK/worker/$FIRST/stdout" "$WORK/worker/$SECOND/stdout")
  [ "$COUNTED" -ge 200 ] || fail "the drivers printed counts adding up to $COUNTED, fewer than the 200 records committed before the first kill"
}

cluster_mode() {
  local topic=spark-submit-cluster-$RUN started=$SECONDS
  MODE=cluster
  APP=(--class QuickStartJob --driver-java-options "${OPT[driver-java-options]}" "$APP_JAR" "$ZK" "$BOOTSTRAP")
  APP_TAIL=()
  cluster_runs "$topic"
  echo "spark-submit cluster mode: passed in $((SECONDS - started)) s: 300 records on $topic; the stored" \
    "offsets were the log ends after the first driver and after it was killed through the master and" \
    "submitted again ($FIRST, $SECOND); the drivers' output counted $COUNTED records (>= 200)"
}

# ---- Kerberos cluster mode --------------------------------------------------------------------
# cluster_runs against the Kerberos cluster (a KDC, a ZooKeeper requiring SASL GSSAPI of every
# session, a broker whose SASL_SSL listener takes only GSSAPI), set up as docs/security.md tells a
# user of a Kerberized cluster: the files go by --files and are named relatively, the JAAS file
# and krb5.conf by Java options, to the driver (the keeper, Spark's driver consumer) and to the
# executors (Spark's consumers).
kerberos_cluster_mode() {
  local topic=spark-submit-kerberos-$RUN started=$SECONDS dir=$WORK/kerberos jars section
  local krb5=$OFFSETKEEPER_KERBEROS_KRB5_CONF
  mkdir -p "$dir/classes"
  # The job compiled as a user's build would: against Spark's jars, offsetkeeper's and the
  # connector's (those cluster mode submits by --jars).
  jars=$(connector_jars)
  "$JAVA_HOME/bin/javac" --release 8 -d "$dir/classes" -cp "$SPARK_HOME/jars/*:$JAR:${jars//,/:}" \
    "$HERE/KerberosClickCount.java" 2>"$LOGS/javac-kerberos.log" \
    || { DIAG+=("$LOGS/javac-kerberos.log"); fail "KerberosClickCount.java did not compile"; }
  "$JAVA_HOME/bin/jar" cf "$dir/app.jar" -C "$dir/classes" . || fail "jar could not pack $dir/classes"

  # What --files ships: a JAAS file as on a Kerberized CDH/HDP cluster (docs/security.md), whose
  # keyTab is relative; the keytab; the truststore. The executors find them in their working
  # directories; the driver in its SparkFiles directory, from which the job copies them into its
  # working directory (KerberosClickCount.java says why).
  for section in Client KafkaClient; do
    printf '%s\n' "$section {" '  com.sun.security.auth.module.Krb5LoginModule required' \
      '  useKeyTab=true storeKey=true useTicketCache=false' '  keyTab="offsetkeeper.keytab"' \
      "  principal=\"$OFFSETKEEPER_KERBEROS_CLIENT_PRINCIPAL\";" '};'
  done >"$dir/jaas.conf"
  cp "$OFFSETKEEPER_KERBEROS_CLIENT_KEYTAB" "$dir/offsetkeeper.keytab"
  chmod 600 "$dir/offsetkeeper.keytab"
  cp "$OFFSETKEEPER_KERBEROS_TRUSTSTORE_JKS" "$dir/truststore.jks"

  # describe: the CLI logs in to ZooKeeper and Kafka from the keytab of the cluster's client JAAS
  # file (the same principal; absolute paths), through the system's GSS-API with the realm's
  # krb5.conf (docs/cli.md, Kerberos), and trusts the broker's CA over SASL_SSL. A keytab login
  # keeps its tickets in memory; KRB5CCNAME names an unused cache of its own all the same, so that
  # no default cache of the machine is read.
  printf '%s\n' security.protocol=SASL_SSL sasl.kerberos.service.name=kafka \
    "ssl.truststore.location=$OFFSETKEEPER_KERBEROS_CA" ssl.truststore.type=PEM \
    "java.security.auth.login.config=$OFFSETKEEPER_KERBEROS_CLIENT_JAAS" >"$dir/cli.properties"
  CLI_ENV=("KRB5_CONFIG=$krb5" "KRB5CCNAME=FILE:$dir/cli.ccache")
  CLI_OPTS=(--command-config "$dir/cli.properties")
  ZK=$OFFSETKEEPER_KERBEROS_ZK BOOTSTRAP=$OFFSETKEEPER_KERBEROS_KAFKA_SASL_SSL
  # Records go in without Kerberos, as the Kerberos tests stage theirs.
  PRODUCE_BOOTSTRAP=$OFFSETKEEPER_KERBEROS_KAFKA_PLAINTEXT

  MODE=kerberos
  APP=(--class KerberosClickCount --files "$dir/jaas.conf,$dir/offsetkeeper.keytab,$dir/truststore.jks"
    --driver-java-options "-Djava.security.auth.login.config=jaas.conf -Djava.security.krb5.conf=$krb5 ${OPT[driver-java-options]}"
    --conf "spark.executor.extraJavaOptions=-Djava.security.auth.login.config=jaas.conf -Djava.security.krb5.conf=$krb5"
    "$dir/app.jar" "$ZK" "$BOOTSTRAP")
  APP_TAIL=("$OFFSETKEEPER_KERBEROS_TRUSTSTORE_PASSWORD") # the job's argument; not in a log line here
  cluster_runs "$topic"
  # What docs/security.md says of a standalone cluster: the driver's working directory lacked them.
  grep -q 'KerberosClickCount: jaas.conf copied from SparkFiles' "$WORK/worker/$FIRST/stderr" \
    || fail "driver $FIRST did not copy jaas.conf from SparkFiles: --files reached its working directory after all (docs/security.md says it does not on a standalone cluster)"
  echo "spark-submit Kerberos cluster mode: passed in $((SECONDS - started)) s: 300 records on $topic;" \
    "SASL_SSL and GSSAPI to Kafka and ZooKeeper, the JAAS file, keytab and truststore by --files (the" \
    "driver took them from its SparkFiles directory, not in its working directory); the" \
    "stored offsets were the log ends after the first driver and after it was killed through the master" \
    "and submitted again ($FIRST, $SECOND); the drivers' output counted $COUNTED records (>= 200)"
}

RUN=$(date +%s)
seen=""
client_mode
cluster_mode
if [ -n "$KERBEROS_ENV" ]; then
  kerberos_cluster_mode
fi
