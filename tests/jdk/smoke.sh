#!/usr/bin/env bash
# The JDK matrix smoke: JdkSmoke (Java 8 bytecode) in a fresh JVM of JDK MAJOR, class path = the
# offsetkeeper_2.12 jar + kafka-clients + slf4j-api, against the cluster of
# build/cluster/cluster.env: load, commit, reload, offsets equal. Checks what the JVM prints: the
# smoke's OK line, no -Xcheck:jni warning, and on Java 24+ that the JDK's "restricted method"
# warning appears without --enable-native-access=ALL-UNNAMED and not with it (the README's advice).
#
#   tests/jdk/smoke.sh MAJOR CLASSPATH CLUSTER_ENV
set -euo pipefail

major=${1:?usage: smoke.sh MAJOR CLASSPATH CLUSTER_ENV}
classpath=${2:?classpath}
env_file=${3:?cluster env file}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF=smoke.sh
# shellcheck source=tests/cluster/lib.sh
. "$here/../cluster/lib.sh"

[ -f "$env_file" ] || die "$env_file is missing: clusterStart should have written it"
zk=$(sed -n 's/^OFFSETKEEPER_ZK=//p' "$env_file")
bootstrap=$(sed -n 's/^OFFSETKEEPER_BOOTSTRAP=//p' "$env_file")
[ -n "$zk" ] && [ -n "$bootstrap" ] || die "no OFFSETKEEPER_ZK/OFFSETKEEPER_BOOTSTRAP in $env_file"

java=$("$here/java-for.sh" "$major")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

fail() {
  echo "---- output of Java $major ($java) ----" >&2
  cat "$out" >&2
  echo "JDK $major smoke FAILED: $*" >&2
  exit 1
}

# run [JVM options...]: the smoke in a fresh JVM, output to $out; fails on a bad exit or output.
run() {
  local status=0
  env -u JAVA_TOOL_OPTIONS -u LD_LIBRARY_PATH -u _JAVA_OPTIONS -u JDK_JAVA_OPTIONS \
    timeout 120 "$java" -Xcheck:jni "$@" -cp "$classpath" io.offsetkeeper.jdksmoke.JdkSmoke \
    "$major" "$zk" "$bootstrap" >"$out" 2>&1 || status=$?
  [ "$status" = 0 ] || fail "exit status $status"
  grep -q '^SMOKE OK' "$out" || fail "no SMOKE OK line"
  ! grep -E 'WARNING in native method|WARNING: JNI local refs|FATAL ERROR in native method' "$out" \
    || fail "-Xcheck:jni warned"
}

if [ "$major" -ge 24 ]; then
  # Without the flag the JDK warns (JEP 472); the check below is not blind.
  run
  grep -q 'WARNING: A restricted method in java.lang.System has been called' "$out" \
    || fail "Java $major without --enable-native-access printed no restricted-method warning"
  echo "Java $major without --enable-native-access=ALL-UNNAMED prints:"
  grep '^WARNING:' "$out" | sed 's/^/  | /'
  run --enable-native-access=ALL-UNNAMED
  ! grep -i 'restricted method\|enable-native-access' "$out" \
    || fail "a restricted-method warning despite --enable-native-access=ALL-UNNAMED"
  echo "Java $major with --enable-native-access=ALL-UNNAMED: no restricted-method warning"
else
  run
fi
grep -E '^(JDK |SMOKE OK)' "$out"
