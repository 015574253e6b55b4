#!/usr/bin/env bash
# The demo: a Spark Streaming job with offsetkeeper on a fresh ZooKeeper 3.8 + Kafka 3.9
# (tests/cluster/cluster.sh: two java processes on loopback, stopped when done).
#   bash tests/demo.sh                                              a fresh test cluster
#   bash tests/demo.sh --zookeeper zk:2181 --bootstrap-servers b:9092   a real cluster instead
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
if [ $# -eq 0 ]; then
  exec bash "$here/run-gradle.sh" -q demo
fi
exec bash "$here/run-gradle.sh" -q :e2e:demo "-Pargs=$*"
