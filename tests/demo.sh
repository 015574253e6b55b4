#!/usr/bin/env bash
# The demo: a Spark Streaming job with offsetkeeper on a fresh embedded ZooKeeper + Kafka.
#   bash tests/demo.sh                                              embedded cluster
#   bash tests/demo.sh --zookeeper zk:2181 --bootstrap-servers b:9092   a real cluster instead
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
if [ $# -eq 0 ]; then
  exec bash "$here/run-gradle.sh" -q demo
fi
exec bash "$here/run-gradle.sh" -q :e2e:demo "-Pargs=$*"
