#!/usr/bin/env bash
# Creates (once) the Python environment of the PyFlink test: apache-flink from PyPI in a venv
# under ~/.cache, shared by every clone of the project, and prints its directory. A venv that an
# interrupted install left behind (no .complete marker) is made anew.
#
#   bash tests/pyflink/venv.sh 1.19.3
set -euo pipefail
version=${1:?usage: venv.sh APACHE_FLINK_VERSION}
# apache-flink 1.19 and 1.20 have wheels for Python 3.8 to 3.11.
python=${OFFSETKEEPER_PYFLINK_PYTHON:-python3.11}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper
dir=${OFFSETKEEPER_PYFLINK_VENV:-$cache/pyflink-$version-$("$python" -c 'import sys; print("py%d%d" % sys.version_info[:2])')}
if [ -f "$dir/.complete" ] && [ -x "$dir/bin/python" ]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9 # another build creating the same venv
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"
  echo "pyflink venv: installing apache-flink==$version into $dir (once; a few minutes)" >&2
  "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "apache-flink==$version" >&2
  "$dir/bin/python" -c 'import pyflink.datastream.connectors.kafka' >&2
  touch "$dir/.complete"
fi
echo "$dir"
