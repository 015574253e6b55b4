#!/usr/bin/env bash
# The test command against real ZooKeeper + Kafka servers it starts itself (build.gradle, "The
# test command", lists every tier and why it is there).
#
#   bash tests/test.sh            every tier (gradle testAll): what CI runs
#   bash tests/test.sh --fast     lint, cargo tests, JVM tests, the Spark 3.5 restart scenarios,
#                                 the JVM Kerberos tests (gradle testFast): the edit-test loop
# Other arguments go to Gradle.
set -euo pipefail
task=testAll
if [ "${1:-}" = --fast ]; then
  task=testFast
  shift
fi
exec bash "$(dirname "${BASH_SOURCE[0]}")/run-gradle.sh" "$task" "$@"
