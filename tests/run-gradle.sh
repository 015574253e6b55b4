#!/usr/bin/env bash
# Runs Gradle from the repo root on a fresh machine: installs Debian's Gradle if missing.
# Used by test.sh and demo.sh; arguments are Gradle task names.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v gradle >/dev/null; then
  echo "gradle not found; installing it from Debian" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get -qq update
  "${sudo[@]}" apt-get -qq install -y gradle >/dev/null
fi

exec gradle --no-daemon "$@"
