#!/usr/bin/env bash
# The pinned cross toolchain of the shipped native binaries: zig (PyPI `ziglang`) as C compiler
# and linker with a glibc 2.17 floor, driven by cargo-zigbuild (PyPI), and the rustup targets.
# Idempotent: installs once per pinned version into a venv under
# ${OFFSETKEEPER_TOOLS:-~/.cache/offsetkeeper/tools}/zig<ZIG>-zigbuild<ZIGBUILD>, then only checks.
#
#   source packaging/native/toolchain.sh    puts cargo-zigbuild and zig on PATH (ZIGBUILD_HOME set)
#   bash packaging/native/toolchain.sh      installs if missing and prints the versions
set -euo pipefail

ZIGLANG_VERSION=0.15.2
CARGO_ZIGBUILD_VERSION=0.24.1
GLIBC_FLOOR="${GLIBC_FLOOR:-2.17}"
RUST_TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)

tools_root="${OFFSETKEEPER_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper/tools}"
ZIGBUILD_HOME="$tools_root/zig${ZIGLANG_VERSION}-zigbuild${CARGO_ZIGBUILD_VERSION}"

if [ ! -x "$ZIGBUILD_HOME/bin/cargo-zigbuild" ] || [ ! -x "$ZIGBUILD_HOME/bin/zig" ]; then
  echo "installing ziglang $ZIGLANG_VERSION and cargo-zigbuild $CARGO_ZIGBUILD_VERSION into $ZIGBUILD_HOME" >&2
  mkdir -p "$tools_root"
  # Built beside and renamed into place: a build interrupted half-way leaves no half venv, and
  # two builds installing at once do not mix their files.
  staging="$(mktemp -d "$tools_root/.install.XXXXXX")"
  trap 'rm -rf "$staging"' EXIT
  python3 -m venv "$staging"
  "$staging/bin/python" -m pip install --quiet --disable-pip-version-check \
    "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
  # `python -m ziglang` as the command `zig`, which cargo-zigbuild finds on PATH.
  printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$ZIGBUILD_HOME/bin/python" > "$staging/bin/zig"
  chmod +x "$staging/bin/zig"
  if [ -d "$ZIGBUILD_HOME" ]; then rm -rf "$ZIGBUILD_HOME"; fi
  mv "$staging" "$ZIGBUILD_HOME"
  trap - EXIT
  # pip wrote the staging path into the entry scripts' shebangs; point them at the final venv.
  for script in "$ZIGBUILD_HOME"/bin/*; do
    [ -f "$script" ] && ! [ -L "$script" ] || continue
    if head -c 2 "$script" | grep -q '#!'; then
      sed -i "1s|$staging|$ZIGBUILD_HOME|" "$script"
    fi
  done
  sed -i "s|$staging|$ZIGBUILD_HOME|g" "$ZIGBUILD_HOME/pyvenv.cfg" "$ZIGBUILD_HOME"/bin/activate* 2>/dev/null || true
fi

# Plain compiler commands for build systems that take only CC/CXX/AR (librdkafka's ./configure):
# zig for one target and the glibc floor. `zig cc -target <arch>-linux-gnu.2.17 --version` fails
# (zig 0.15.2: "version '.2.17' in target triple ... is invalid"), and ./configure then falls
# back to the host's gcc, so --version goes to zig without the target. Rewritten every time.
for zig_arch in x86_64 aarch64; do
  for tool in cc c++; do
    wrapper="$ZIGBUILD_HOME/bin/zig${tool/c++/cxx}-$zig_arch-$GLIBC_FLOOR"
    cat > "$wrapper.tmp" <<WRAPPER
#!/bin/sh
case " \$* " in *" --version "*) exec "$ZIGBUILD_HOME/bin/zig" $tool "\$@" ;; esac
exec "$ZIGBUILD_HOME/bin/zig" $tool -target $zig_arch-linux-gnu.$GLIBC_FLOOR "\$@"
WRAPPER
    chmod +x "$wrapper.tmp" && mv "$wrapper.tmp" "$wrapper"
  done
done
for tool in ar ranlib; do
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$ZIGBUILD_HOME/bin/zig" "$tool" > "$ZIGBUILD_HOME/bin/zig$tool.tmp"
  chmod +x "$ZIGBUILD_HOME/bin/zig$tool.tmp" && mv "$ZIGBUILD_HOME/bin/zig$tool.tmp" "$ZIGBUILD_HOME/bin/zig$tool"
done

installed="$(rustup target list --installed)"
for target in "${RUST_TARGETS[@]}"; do
  if ! grep -qx "$target" <<<"$installed"; then
    echo "rustup target add $target" >&2
    rustup target add "$target" >&2
  fi
done

export ZIGBUILD_HOME
export PATH="$ZIGBUILD_HOME/bin:$PATH"

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "zig $(zig version), $(cargo-zigbuild --version), rustc $(rustc --version | cut -d' ' -f2)"
fi
