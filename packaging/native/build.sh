#!/usr/bin/env bash
# The shipped native binaries, built for a glibc 2.17 floor with zig as C compiler and linker
# (cargo-zigbuild; toolchain.sh installs the pinned versions on first use). Run from anywhere:
#
#   packaging/native/build.sh jni  x86_64|aarch64   target/<triple>/release/liboffsetkeeper_jni.so
#   packaging/native/build.sh jni-test x86_64|aarch64
#                                                target/<triple>/release/test-panic/liboffsetkeeper_jni.so
#                                                (the tests' build: feature test-panic)
#   packaging/native/build.sh cli  x86_64|aarch64   target/<triple>/release/offsetkeeper
#   packaging/native/build.sh dist x86_64|aarch64   build/dist/offsetkeeper-cli-<version>-linux-<arch>.tar.gz
#                                                (from the CLI built by `cli`)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

GLIBC_FLOOR=2.17

usage() { echo "usage: $0 jni|jni-test|cli|dist x86_64|aarch64" >&2; exit 2; }
[ $# -eq 2 ] || usage
what="$1" arch="$2"
case "$arch" in
  x86_64 | aarch64) triple="$arch-unknown-linux-gnu" ;;
  *) usage ;;
esac

case "$what" in
  jni | jni-test | cli)
    # shellcheck source=toolchain.sh
    source packaging/native/toolchain.sh
    package=offsetkeeper-jni
    [ "$what" = cli ] && package=offsetkeeper-cli
    # cargo-zigbuild gives the C parts zig for the target through CC_<triple> (aws-lc, zlib).
    # librdkafka's ./configure (the CLI's) reads only CC, CXX and AR: zig for the target too,
    # and the host's compiler kept for host code through HOST_CC / HOST_CXX. Set for the JNI
    # library as well: build scripts that watch these variables (aws-lc-sys) then see the same
    # values in both builds and do not build again.
    export CC="$ZIGBUILD_HOME/bin/zigcc-$arch-$GLIBC_FLOOR" CXX="$ZIGBUILD_HOME/bin/zigcxx-$arch-$GLIBC_FLOOR"
    export AR="$ZIGBUILD_HOME/bin/zigar" RANLIB="$ZIGBUILD_HOME/bin/zigranlib"
    export HOST_CC="${HOST_CC:-cc}" HOST_CXX="${HOST_CXX:-c++}" HOST_AR="${HOST_AR:-ar}"
    # zig's glibc headers declare C11 threads for glibc 2.17 too (see the header's comment).
    export CFLAGS="-I$PWD/packaging/native/glibc-$GLIBC_FLOOR-include${CFLAGS:+ $CFLAGS}"
    # `make libs` also links librdkafka.so, whose version script names symbols of its test
    # build; LLD (zig's linker) refuses those unless told otherwise. The CLI links the .a.
    export LDFLAGS="-Wl,--undefined-version${LDFLAGS:+ $LDFLAGS}"
    set -x
    build=(cargo zigbuild --release --locked -p "$package" --target "$triple.$GLIBC_FLOOR")
    [ "$what" = jni-test ] || exec "${build[@]}"
    # The test build has the cargo output name of the shipped one: copied aside, then the
    # shipped library put back (only the JNI crate is compiled again, and once: both stay cached).
    "${build[@]}" --features test-panic
    mkdir -p "target/$triple/release/test-panic"
    cp "target/$triple/release/liboffsetkeeper_jni.so" "target/$triple/release/test-panic/liboffsetkeeper_jni.so.tmp"
    mv "target/$triple/release/test-panic/liboffsetkeeper_jni.so.tmp" "target/$triple/release/test-panic/liboffsetkeeper_jni.so"
    exec "${build[@]}"
    ;;
  dist)
    version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
    [ -n "$version" ] || { echo "no [workspace.package] version in Cargo.toml" >&2; exit 1; }
    binary="target/$triple/release/offsetkeeper"
    [ -x "$binary" ] || { echo "$binary is missing: run $0 cli $arch first" >&2; exit 1; }
    name="offsetkeeper-cli-$version-linux-$arch"
    stage="build/dist/.stage/$name"
    rm -rf "$stage"
    mkdir -p "$stage"
    cp "$binary" "$stage/offsetkeeper"
    for doc in README.md CHANGELOG.md SECURITY.md LICENSE NOTICE; do
      cp "$doc" "$stage/"
    done
    # The README's links into docs/ (docs/cli.md, docs/cli-reference.md, ...) resolve in the
    # tarball; the tracked pages only, so the same commit gives the same bytes.
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git ls-files -z docs | xargs -0 cp --parents -t "$stage/"
    else
      cp -r docs "$stage/"
    fi
    # The CLI's crates (gradle generateCliThirdPartyLicenses), and the license files of the C
    # libraries two of them build in: librdkafka (with what it bundles) and OpenSSL.
    licenses=build/licenses/cli/THIRD-PARTY-LICENSES
    [ -f "$licenses" ] || { echo "$licenses is missing: run gradle generateCliThirdPartyLicenses" >&2; exit 1; }
    cp "$licenses" "$stage/"
    mkdir -p "$stage/licenses"
    crate_dir() {
      cargo metadata --locked --format-version 1 | python3 -c '
import json, os, sys
dirs = [os.path.dirname(p["manifest_path"]) for p in json.load(sys.stdin)["packages"] if p["name"] == sys.argv[1]]
if len(dirs) != 1: sys.exit(f"expected one {sys.argv[1]} package in Cargo.lock, found {len(dirs)}")
print(dirs[0])' "$1"
    }
    cp "$(crate_dir rdkafka-sys)/librdkafka/LICENSES.txt" "$stage/licenses/librdkafka-LICENSES.txt"
    cp "$(crate_dir openssl-src)/openssl/LICENSE.txt" "$stage/licenses/OpenSSL-LICENSE.txt"
    # The same bytes for the same inputs: sorted names, no owner, the last commit's time.
    mtime="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
      -C build/dist/.stage -cf - "$name" | gzip -n -9 > "build/dist/$name.tar.gz.tmp"
    mv "build/dist/$name.tar.gz.tmp" "build/dist/$name.tar.gz"
    rm -rf build/dist/.stage
    echo "build/dist/$name.tar.gz"
    ;;
  *) usage ;;
esac
