#!/usr/bin/env bash
# Creates (once) the Spark of the spark-submit test: pyspark from PyPI in a venv under
# ~/.cache/offsetkeeper/tools, shared by every clone of the project, and prints its SPARK_HOME:
# the pyspark package folder, which holds a Spark distribution's bin/ (spark-submit,
# spark-class) and jars/. A venv that an interrupted install left behind (no .complete marker)
# is made anew.
#
#   bash tests/spark-submit/venv.sh 3.5.1
set -euo pipefail
version=${1:?usage: venv.sh PYSPARK_VERSION}
python=${OFFSETKEEPER_SPARK_PYTHON:-python3}
tools=${OFFSETKEEPER_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper/tools}
dir=$tools/pyspark-$version

# The package folder without importing pyspark (which would start loading py4j).
spark_home() {
  "$dir/bin/python" -c 'import importlib.util; print(importlib.util.find_spec("pyspark").submodule_search_locations[0])'
}

if [ -f "$dir/.complete" ] && [ -x "$dir/bin/python" ]; then
  spark_home
  exit 0
fi
mkdir -p "$tools"
exec 9>"$dir.lock"
flock 9 # another build creating the same venv
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"
  echo "spark-submit venv: installing pyspark==$version into $dir (once; a 300 MB download, a few minutes)" >&2
  "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "pyspark==$version" >&2
  home=$(spark_home)
  # spark-submit execs bin/spark-class: make sure the package data kept its executable bits.
  chmod +x "$home"/bin/*
  [ -f "$home/jars/spark-core_2.12-$version.jar" ] \
    || { echo "spark-submit venv: $home/jars has no spark-core_2.12-$version.jar; is it a Spark distribution?" >&2; exit 1; }
  touch "$dir/.complete"
fi
spark_home
