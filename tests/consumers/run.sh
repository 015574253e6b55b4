#!/usr/bin/env bash
# Runs one consumer project (sbt, maven or gradle) as a user's build would: it resolves
# io.offsetkeeper:offsetkeeper_2.12:<version> from the file repository build/repo by its
# coordinates, compiles a job's three lines, and runs a load + commit + second load against the
# test cluster. The project is copied to build/consumers/<kind>, so that its build output stays
# out of the source tree. Gradle's consumerTests task runs all three (after publishAll and
# clusterStart).
#
#   run.sh sbt|maven|gradle
#
# Env: OFFSETKEEPER_VERSION        the version to depend on (required)
#      OFFSETKEEPER_REPO           the file repository (default <repo>/build/repo)
#      OFFSETKEEPER_CLUSTER_ENV    cluster.env of clusterStart (default <repo>/build/cluster/cluster.env)
#      OFFSETKEEPER_CONSUMER_CACHE downloads kept between runs: the sbt launcher, sbt's boot,
#                                  Ivy and Coursier directories, Maven's local repository
#                                  (default ~/.cache/offsetkeeper-consumers)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SELF=consumers/run.sh
# shellcheck source=tests/cluster/lib.sh
. "$ROOT/tests/cluster/lib.sh"
KIND=${1:?usage: run.sh sbt|maven|gradle}
VERSION=${OFFSETKEEPER_VERSION:?OFFSETKEEPER_VERSION is not set}
REPO=${OFFSETKEEPER_REPO:-$ROOT/build/repo}
CLUSTER_ENV=${OFFSETKEEPER_CLUSTER_ENV:-$ROOT/build/cluster/cluster.env}
CACHE=${OFFSETKEEPER_CONSUMER_CACHE:-$HOME/.cache/offsetkeeper-consumers}
SBT_LAUNCHER_VERSION=1.10.11
SBT_LAUNCHER_SHA256=e988d533a020e5b60ec22c3b5df4cd3e3df465f4fdc3951c63036e21483978e4 # its .sha1 on Central: 4e3ca243...

[ -f "$REPO/io/offsetkeeper/offsetkeeper_2.12/$VERSION/offsetkeeper_2.12-$VERSION.pom" ] \
  || die "no io.offsetkeeper:offsetkeeper_2.12:$VERSION in $REPO; run 'gradle publishAll'"
[ -f "$CLUSTER_ENV" ] || die "$CLUSTER_ENV is missing; run 'gradle clusterStart'"
# shellcheck source=/dev/null
. "$CLUSTER_ENV"
REPO_URL=$(python3 -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).resolve().as_uri())' "$REPO")

WORK=$ROOT/build/consumers/$KIND
rm -rf "$WORK"
mkdir -p "$WORK" "$CACHE"
cp -r "$HERE/$KIND/." "$WORK/"
cd "$WORK"
started=$(date +%s)

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
    # Only the local Ivy repository, build/repo and Maven Central; the build's own resolvers
    # are overridden by these.
    printf '[repositories]\n  local\n  offsetkeeper-build: %s\n  maven-central\n' "$REPO_URL/" \
      >"$WORK/repositories"
    COURSIER_CACHE=$CACHE/coursier java -Xmx1g \
      -Dsbt.boot.directory="$CACHE/sbt-boot" -Dsbt.ivy.home="$CACHE/ivy2" \
      -Dsbt.global.base="$CACHE/sbt-global" -Dsbt.coursier.home="$CACHE/coursier" \
      -Dsbt.repository.config="$WORK/repositories" -Dsbt.override.build.repos=true \
      -Dsbt.server.forcestart=false -Dsbt.supershell=false -Dsbt.color=false -Dsbt.ci=true \
      -Doffsetkeeper.version="$VERSION" \
      -jar "$launcher" "run $OFFSETKEEPER_ZK $OFFSETKEEPER_BOOTSTRAP" </dev/null | tee "$WORK/output.txt"
    ;;
  maven)
    # A published release is cached in the local repository: drop it, so this run takes the
    # artifact just published.
    rm -rf "$CACHE/m2/io/offsetkeeper"
    mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$CACHE/m2" -Doffsetkeeper.repo="$REPO_URL" \
      -Doffsetkeeper.version="$VERSION" -Dzookeeper="$OFFSETKEEPER_ZK" \
      -Dbootstrap="$OFFSETKEEPER_BOOTSTRAP" compile exec:exec | tee "$WORK/output.txt"
    ;;
  gradle)
    gradle --no-daemon -q -PoffsetkeeperRepo="$REPO_URL" -PoffsetkeeperVersion="$VERSION" \
      -Pzookeeper="$OFFSETKEEPER_ZK" -Pbootstrap="$OFFSETKEEPER_BOOTSTRAP" runJob \
      | tee "$WORK/output.txt"
    ;;
  *) die "unknown consumer $KIND; one of sbt, maven, gradle" ;;
esac

grep -q "CONSUMER OK $KIND " "$WORK/output.txt" || die "$KIND consumer printed no CONSUMER OK line"
echo "consumers/run.sh: $KIND consumer passed in $(( $(date +%s) - started )) s"
