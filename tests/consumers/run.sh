#!/usr/bin/env bash
# Runs one consumer project (sbt, maven, gradle or cargo) as a user's build would: its build file holds
# the docs' dependency lines verbatim (README.md, docs/installation.md; the docs check holds them
# equal), it resolves io.offsetkeeper:offsetkeeper_2.12:<version> by its coordinates, compiles a
# job's three lines, and runs a load + commit + second load against the test cluster. sbt also
# compiles the README's QuickStartJob.scala; Maven resolves from a repository the docs'
# deploy:deploy-file loop filled. The project is copied to build/consumers/<kind>, where the docs'
# placeholder path becomes the file repository's URL, so that its build output stays out of the
# source tree. A Cargo project of docs/rust.md's lines (cargo) resolves the crate with the
# vendored [patch] crates. Gradle's consumerTests task runs all four (after publishAll and
# clusterStart).
#
#   run.sh sbt|maven|gradle|cargo
#
# Env: OFFSETKEEPER_VERSION        the version to depend on (required)
#      OFFSETKEEPER_REPO           the file repository (default <repo>/build/repo)
#      OFFSETKEEPER_CLUSTER_ENV    cluster.env of clusterStart (default <repo>/build/cluster/cluster.env)
#      OFFSETKEEPER_CONSUMER_CACHE downloads kept between runs: the sbt launcher, sbt's boot,
#                                  Ivy and Coursier directories, Maven's local repository
#                                  (default ~/.cache/offsetkeeper-consumers)
set -euo pipefail

# Physical paths (pwd -P): Cargo reports its manifests' paths so.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
SELF=consumers/run.sh
# shellcheck source=tests/cluster/lib.sh
. "$ROOT/tests/cluster/lib.sh"
KIND=${1:?usage: run.sh sbt|maven|gradle|cargo}
VERSION=${OFFSETKEEPER_VERSION:?OFFSETKEEPER_VERSION is not set}
REPO=${OFFSETKEEPER_REPO:-$ROOT/build/repo}
CLUSTER_ENV=${OFFSETKEEPER_CLUSTER_ENV:-$ROOT/build/cluster/cluster.env}
CACHE=${OFFSETKEEPER_CONSUMER_CACHE:-$HOME/.cache/offsetkeeper-consumers}
SBT_LAUNCHER_VERSION=1.10.11
SBT_LAUNCHER_SHA256=e988d533a020e5b60ec22c3b5df4cd3e3df465f4fdc3951c63036e21483978e4 # its .sha1 on Central: 4e3ca243...

file_url() { python3 -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).resolve().as_uri())' "$1"; }

# The JVM builds take the published artifact and run against the cluster; Cargo needs neither.
if [ "$KIND" != cargo ]; then
  [ -f "$REPO/io/offsetkeeper/offsetkeeper_2.12/$VERSION/offsetkeeper_2.12-$VERSION.pom" ] \
    || die "no io.offsetkeeper:offsetkeeper_2.12:$VERSION in $REPO; run 'gradle publishAll'"
  [ -f "$CLUSTER_ENV" ] || die "$CLUSTER_ENV is missing; run 'gradle clusterStart'"
  # shellcheck source=/dev/null
  . "$CLUSTER_ENV"
  REPO_URL=$(file_url "$REPO")
fi

# The docs' snippets name one version; a build of another must update them (and this check).
DOCS_VERSION=$(sed -n 's/^V=//p' "$HERE/maven/deploy.sh")
[ "$DOCS_VERSION" = "$VERSION" ] \
  || die "the docs' snippets are for $DOCS_VERSION but the build is $VERSION: update README.md, docs/installation.md and tests/consumers"
PLACEHOLDER=file:///path/to/offsetkeeper/build/repo

WORK=$ROOT/build/consumers/$KIND
rm -rf "$WORK"
mkdir -p "$WORK" "$CACHE"
cp -r "$HERE/$KIND/." "$WORK/"
cd "$WORK"
started=$(date +%s)

# put_repository FILE URL: FILE depends on $VERSION (as sbt, Gradle or Maven write it), and the
# docs' placeholder in it becomes URL (exactly once).
put_repository() {
  grep -qF -e "% \"$VERSION\"" -e ":$VERSION'" -e "<version>$VERSION</version>" "$1" \
    || die "$1 does not depend on offsetkeeper $VERSION"
  [ "$(grep -cF "$PLACEHOLDER" "$1")" = 1 ] || die "$1 does not name $PLACEHOLDER exactly once"
  sed -i "s#$PLACEHOLDER#$2#" "$1"
}

case "$KIND" in
  sbt)
    launcher=$CACHE/sbt-launch-$SBT_LAUNCHER_VERSION.jar
    if [ ! -f "$launcher" ]; then
      curl -fsSL -o "$launcher.part" \
        "https://repo1.maven.org/maven2/org/scala-sbt/sbt-launch/$SBT_LAUNCHER_VERSION/sbt-launch-$SBT_LAUNCHER_VERSION.jar"
      mv "$launcher.part" "$launcher"
    fi
    echo "$SBT_LAUNCHER_SHA256  $launcher" | sha256sum -c --quiet - \
      || die "$launcher does not have the pinned SHA-256; delete it to download it again"
    put_repository build.sbt "$REPO_URL"
    cp "$ROOT/examples/scala/QuickStartJob.scala" src/main/scala/
    # sbt's default resolvers (the local Ivy repository, Maven Central) and the build's own.
    # A published release is cached by Coursier: drop it, so this run takes the one just built.
    rm -rf "$CACHE/coursier/https/repo1.maven.org/maven2/io/offsetkeeper" "$CACHE/coursier/file"
    COURSIER_CACHE=$CACHE/coursier java -Xmx1g \
      -Dsbt.boot.directory="$CACHE/sbt-boot" -Dsbt.ivy.home="$CACHE/ivy2" \
      -Dsbt.global.base="$CACHE/sbt-global" -Dsbt.coursier.home="$CACHE/coursier" \
      -Dsbt.server.forcestart=false -Dsbt.supershell=false -Dsbt.color=false -Dsbt.ci=true \
      -jar "$launcher" "run $OFFSETKEEPER_ZK $OFFSETKEEPER_BOOTSTRAP" </dev/null | tee "$WORK/output.txt"
    ;;
  maven)
    # A published release is cached in the local repository: drop it, so this run takes the
    # artifact just published.
    rm -rf "$CACHE/m2/io/offsetkeeper"
    # The docs' deploy loop, into a file repository standing for Nexus; the build resolves from it.
    deployed=$WORK/deployed
    mkdir -p "$deployed"
    deployed_url=$(file_url "$deployed")
    sed -e "s#https://nexus.example.com/repository/maven-releases/#$deployed_url#" \
        -e "s#D=build/repo/#D=$REPO/#" -e 's#mvn deploy:deploy-file#mvn -B -q deploy:deploy-file#' \
        "$HERE/maven/deploy.sh" >"$WORK/deploy.sh"
    for changed in "$deployed_url" "D=$REPO/" "mvn -B -q deploy:deploy-file"; do
      grep -qF "$changed" "$WORK/deploy.sh" || die "deploy.sh no longer has the docs' line that becomes $changed"
    done
    (cd "$ROOT" && MAVEN_OPTS="-Dmaven.repo.local=$CACHE/m2" bash "$WORK/deploy.sh") \
      || die "the docs' deploy:deploy-file loop failed"
    for a in offsetkeeper_2.12 offsetkeeper_2.13; do
      for f in "$a-$VERSION.jar" "$a-$VERSION.pom" "$a-$VERSION-sources.jar" "$a-$VERSION-javadoc.jar"; do
        [ -f "$deployed/io/offsetkeeper/$a/$VERSION/$f" ] || die "the deploy loop did not deploy $f"
      done
    done
    put_repository pom.xml "$deployed_url"
    mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$CACHE/m2" -Dzookeeper="$OFFSETKEEPER_ZK" \
      -Dbootstrap="$OFFSETKEEPER_BOOTSTRAP" compile exec:exec | tee "$WORK/output.txt"
    ;;
  gradle)
    put_repository build.gradle "$REPO_URL"
    gradle --no-daemon -q -Pzookeeper="$OFFSETKEEPER_ZK" -Pbootstrap="$OFFSETKEEPER_BOOTSTRAP" runJob \
      | tee "$WORK/output.txt"
    ;;
  cargo)
    # docs/rust.md: the path dependency on this checkout, the vendored crates copied into the
    # project's tree, [patch.crates-io] pointing at them. Cargo must take both from the copies
    # (a [patch] that does not apply is only a warning).
    [ "$(grep -cF '"../offsetkeeper/rust/core"' Cargo.toml)" = 1 ] || die "Cargo.toml no longer names ../offsetkeeper/rust/core"
    sed -i "s#\"\.\./offsetkeeper/rust/core\"#\"$ROOT/rust/core\"#" Cargo.toml
    mkdir -p vendor
    cp -r "$ROOT/vendor/zookeeper-client" "$ROOT/vendor/kafka-protocol" vendor/
    # The workspace's lock: the same crate versions as the engine's own build, resolved offline.
    cp "$ROOT/Cargo.lock" .
    cargo metadata --offline --format-version 1 >metadata.json 2>metadata.err \
      || { cat metadata.err >&2; die "cargo could not resolve the docs' Cargo.toml"; }
    if grep -i "not used" metadata.err; then die "a [patch] entry of the docs was not used"; fi
    python3 - "$WORK/vendor" <<'PY' | tee "$WORK/output.txt"
import json, os, sys
vendor = sys.argv[1]
packages = {p["name"]: p for p in json.load(open("metadata.json"))["packages"]}
for name in ("zookeeper-client", "kafka-protocol"):
    p = packages.get(name)
    if p is None or p["source"] is not None or not p["manifest_path"].startswith(vendor + os.sep):
        sys.exit(f"{name} is not taken from {vendor}: {p and (p['source'] or p['manifest_path'])}")
print(f"CONSUMER OK cargo zookeeper-client {packages['zookeeper-client']['version']} and "
      f"kafka-protocol {packages['kafka-protocol']['version']} from vendor/")
PY
    ;;
  *) die "unknown consumer $KIND; one of sbt, maven, gradle, cargo" ;;
esac

grep -q "CONSUMER OK $KIND " "$WORK/output.txt" || die "$KIND consumer printed no CONSUMER OK line"
echo "consumers/run.sh: $KIND consumer passed in $(( $(date +%s) - started )) s"
