#!/usr/bin/env bash
# The bounded soak (by hand, not CI): 100,000 commits of 20 partitions and 10,000 loads by one
# keeper in one JVM, on a real ZooKeeper + Kafka of its own (build/soak-cluster), sampling RSS,
# threads and open file descriptors with commit and load latencies 20 times.
#
#   bash tests/soak/soak.sh [COMMITS] [LOADS] [MAX_MINUTES]    defaults 100000 10000 45
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF=soak.sh
# shellcheck source=tests/cluster/lib.sh
. "$ROOT/tests/cluster/lib.sh"
cd "$ROOT"
COMMITS=${1:-100000}
LOADS=${2:-10000}
MAX_MINUTES=${3:-45}
OUT=$ROOT/build/soak
CLUSTER=$ROOT/build/soak-cluster

bash tests/run-gradle.sh -q :jvm:jar clusterClasspath
jar=$(ls "$ROOT"/jvm/build/libs/offsetkeeper_2.12-*.jar | head -n 1)
find_jar() { find "$HOME/.gradle/caches/modules-2" -name "$1" | head -n 1; }
kafka_clients=$(find_jar 'kafka-clients-3.9.1.jar')
slf4j=$(find_jar 'slf4j-api-1.7.36.jar')
slf4j_simple=$(find_jar 'slf4j-simple-1.7.36.jar' || true)
[ -n "$kafka_clients" ] && [ -n "$slf4j" ] || die "kafka-clients or slf4j-api not in the Gradle cache"
classpath="$jar:$kafka_clients:$slf4j${slf4j_simple:+:$slf4j_simple}"

# OffsetRange (Spark) appears in the API's signatures: needed to compile, not to run.
spark_kafka=$(find_jar 'spark-streaming-kafka-0-10_2.12-3.5.1.jar')
mkdir -p "$OUT/classes"
javac -d "$OUT/classes" -cp "$classpath:$spark_kafka" tests/soak/Soak.java

export OFFSETKEEPER_CLUSTER_CLASSPATH=$ROOT/build/cluster/classpath.txt
trap 'bash tests/cluster/cluster.sh stop "$CLUSTER" || true' EXIT
bash tests/cluster/cluster.sh start "$CLUSTER"
# shellcheck source=/dev/null
. "$CLUSTER/cluster.env"
# A fixed heap, touched at start: the RSS then moves only with native memory (and metaspace).
java -Xms256m -Xmx256m -XX:+AlwaysPreTouch -cp "$OUT/classes:$classpath" Soak "$OFFSETKEEPER_ZK" "$OFFSETKEEPER_BOOTSTRAP" \
  "$COMMITS" "$LOADS" "$MAX_MINUTES" | tee "$OUT/soak.txt"
log "figures in $OUT/soak.txt"
