#!/usr/bin/env bash
# Every test tier against a real ZooKeeper + Kafka (see build.gradle, task testAll).
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/run-gradle.sh" testAll "$@"
