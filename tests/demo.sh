#!/usr/bin/env bash
# The demo example against a fresh real cluster (see build.gradle, task demo).
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/run-gradle.sh" demo "$@"
