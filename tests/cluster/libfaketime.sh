#!/usr/bin/env bash
# Writes the path of libfaketime.so.1 to FILE, installing Debian's libfaketime first when it is
# missing (as run-gradle.sh installs Gradle). KerberosTest preloads it into a keeper's JVM to
# skew that JVM's clock against the KDC's (FAKETIME=+10m): libfaketime 0.9.10 of Debian 12.
#
#   libfaketime.sh FILE
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: libfaketime.sh FILE" >&2; exit 2; }

find_library() { dpkg -L libfaketime 2>/dev/null | grep '/libfaketime\.so\.1$' | head -n 1 || true; }

library=$(find_library)
if [ -z "$library" ]; then
  echo "libfaketime not found; installing it from Debian" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get -qq update
  "${sudo[@]}" apt-get -qq install -y libfaketime >/dev/null
  library=$(find_library)
fi
[ -f "$library" ] || { echo "libfaketime.sh: libfaketime is installed but has no libfaketime.so.1" >&2; exit 1; }
mkdir -p "$(dirname "$1")"
echo "$library" >"$1.tmp"
mv "$1.tmp" "$1"
