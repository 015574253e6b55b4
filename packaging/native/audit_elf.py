#!/usr/bin/env python3
"""ELF audit of the shipped native binaries, in the spirit of auditwheel.

For every binary given:
  - the highest GLIBC_ symbol version it needs is at most --max-glibc (2.17: CentOS 7);
  - its NEEDED libraries are only glibc's own (libc, libm, libdl, libpthread, librt, ld-linux)
    and libgcc_s, which every glibc system has;
  - with --jni: the library defines (exports) only `Java_*` and `JNI_On*` dynamic symbols,
    and no test-only entry point (`*ForTest`: the tests' build has those, feature test-panic);
  - with --machine: it is built for that architecture (x86_64, aarch64).

It reads `readelf -W -h -d --dyn-syms -V` (binutils reads every architecture's ELF files), so it
needs nothing but Python 3 and readelf. A failure names the binary and each offending symbol or
library; the exit status is 1. Usage:

  audit_elf.py [--max-glibc 2.17] [--jni LIB[:MACHINE]]... [--exe BIN[:MACHINE]]...
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

ALLOWED_NEEDED = (
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "ld-linux-*.so.*",
    "libgcc_s.so.1",
)
JNI_EXPORTS = ("Java_*", "JNI_On*")
TEST_ONLY_EXPORTS = ("*ForTest",)
MACHINES = {
    "x86_64": "Advanced Micro Devices X86-64",
    "aarch64": "AArch64",
}

# `  12: 0000000000001234   56 FUNC    GLOBAL DEFAULT   13 name@@VER` (also `name@VER (3)`)
SYMBOL = re.compile(
    r"^\s*\d+:\s+[0-9a-fA-F]+\s+\S+\s+(?P<type>\S+)\s+(?P<bind>\S+)\s+(?P<vis>\S+)\s+"
    r"(?P<ndx>\S+)\s+(?P<name>\S+)(?:\s+\(\d+\))?\s*$"
)
NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[(?P<lib>[^\]]+)\]")
VERSION_NEED = re.compile(r"^\s*0x[0-9a-fA-F]+:\s+Name: (?P<name>\S+)\s+Flags:")
MACHINE = re.compile(r"^\s*Machine:\s+(?P<machine>.+?)\s*$")


@dataclass
class Elf:
    """What the audit needs from readelf's report on one file."""

    machine: str = ""
    needed: list[str] = field(default_factory=list)
    # (name, version or "") of every undefined dynamic symbol
    imports: list[tuple[str, str]] = field(default_factory=list)
    # names of the defined GLOBAL/WEAK dynamic symbols
    exports: list[str] = field(default_factory=list)
    # every version the file needs (.gnu.version_r), e.g. GLIBC_2.17
    version_needs: list[str] = field(default_factory=list)


def parse(report: str) -> Elf:
    """Parses `readelf -W -h -d --dyn-syms -V` output."""
    elf = Elf()
    in_dynsym = False
    for line in report.splitlines():
        if line.startswith("Symbol table '"):
            in_dynsym = ".dynsym" in line
            continue
        if not line.strip() or line.startswith(("Version symbols section", "Version needs section",
                                                "Version definition section", "Dynamic section")):
            in_dynsym = False
        if m := MACHINE.match(line):
            elf.machine = m["machine"]
        elif m := NEEDED.search(line):
            elf.needed.append(m["lib"])
        elif m := VERSION_NEED.match(line):
            elf.version_needs.append(m["name"])
        elif in_dynsym and (m := SYMBOL.match(line)):
            name, _, version = m["name"].partition("@")
            version = version.lstrip("@")
            if m["ndx"] == "UND":
                if name:
                    elf.imports.append((name, version))
            elif m["bind"] in ("GLOBAL", "WEAK", "GNU_UNIQUE") and name:
                elf.exports.append(name)
    return elf


def glibc_version(version: str) -> tuple[int, ...] | None:
    """(2, 17) for GLIBC_2.17; None for anything else (GLIBC_PRIVATE, GCC_3.0, ...)."""
    m = re.fullmatch(r"GLIBC_(\d+(?:\.\d+)*)", version)
    return tuple(int(part) for part in m[1].split(".")) if m else None


def highest_glibc(elf: Elf) -> str:
    versions = [v for v in elf.version_needs if glibc_version(v)]
    versions += [v for _, v in elf.imports if glibc_version(v)]
    return max(versions, key=glibc_version, default="none")


def check(elf: Elf, *, max_glibc: str, jni: bool, machine: str | None) -> list[str]:
    """The audit's findings for one parsed file; empty when it passes."""
    problems = []
    floor = glibc_version(f"GLIBC_{max_glibc}")
    if floor is None:
        raise ValueError(f"--max-glibc {max_glibc!r} is not a version like 2.17")
    too_new = sorted({(name, v) for name, v in elf.imports
                      if (parsed := glibc_version(v)) and parsed > floor},
                     key=lambda item: (glibc_version(item[1]), item[0]))
    for name, version in too_new:
        problems.append(f"symbol {name}@{version} needs glibc newer than {max_glibc}")
    for version in sorted(set(elf.version_needs), key=lambda v: glibc_version(v) or ()):
        parsed = glibc_version(version)
        if parsed and parsed > floor and not any(v == version for _, v in too_new):
            problems.append(f"version need {version} is newer than GLIBC_{max_glibc}")
        if version == "GLIBC_PRIVATE":
            problems.append("needs GLIBC_PRIVATE symbols (not a stable glibc interface)")
    for lib in elf.needed:
        if not any(fnmatch.fnmatchcase(lib, pattern) for pattern in ALLOWED_NEEDED):
            problems.append(f"NEEDED {lib} is not one of {', '.join(ALLOWED_NEEDED)}")
    if jni:
        for name in sorted(set(elf.exports)):
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in JNI_EXPORTS):
                problems.append(f"exported symbol {name} is not Java_* or JNI_On*")
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in TEST_ONLY_EXPORTS):
                problems.append(f"exported symbol {name} is a test-only entry point")
        if not any(name.startswith("Java_") for name in elf.exports):
            problems.append("exports no Java_* symbol: not the JNI library")
    if machine is not None:
        expected = MACHINES[machine]
        if elf.machine != expected:
            problems.append(f"machine is {elf.machine or 'unknown'!r}, expected {expected!r} ({machine})")
    return problems


def readelf(path: str) -> str:
    try:
        result = subprocess.run(["readelf", "-W", "-h", "-d", "--dyn-syms", "-V", path],
                                capture_output=True, text=True, check=False)
    except FileNotFoundError:
        sys.exit("audit_elf: readelf not found (Debian: apt-get install binutils)")
    if result.returncode != 0 or "ELF Header" not in result.stdout:
        raise RuntimeError(f"readelf could not read {path}: {result.stderr.strip()}")
    return result.stdout


def spec(value: str) -> tuple[str, str | None]:
    path, sep, machine = value.rpartition(":")
    if sep and machine in MACHINES:
        return path, machine
    return value, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-glibc", default="2.17")
    parser.add_argument("--jni", action="append", default=[], type=spec, metavar="LIB[:MACHINE]",
                        help="a JNI library: exports only Java_* and JNI_On*")
    parser.add_argument("--exe", action="append", default=[], type=spec, metavar="BIN[:MACHINE]",
                        help="an executable or other library")
    args = parser.parse_args(argv)
    targets = [(path, machine, True) for path, machine in args.jni]
    targets += [(path, machine, False) for path, machine in args.exe]
    if not targets:
        parser.error("nothing to audit: give --jni or --exe")
    failed = 0
    for path, machine, jni in targets:
        if not os.path.isfile(path):
            print(f"FAIL {path}: no such file", file=sys.stderr)
            failed += 1
            continue
        try:
            elf = parse(readelf(path))
        except RuntimeError as err:
            print(f"FAIL {path}: {err}", file=sys.stderr)
            failed += 1
            continue
        problems = check(elf, max_glibc=args.max_glibc, jni=jni, machine=machine)
        summary = (f"{path}: {machine or elf.machine}, {os.path.getsize(path)} bytes, "
                   f"highest {highest_glibc(elf)}, NEEDED {' '.join(elf.needed) or '-'}"
                   + (f", {len(elf.exports)} exports" if jni else ""))
        if problems:
            failed += 1
            print(f"FAIL {summary}", file=sys.stderr)
            for problem in problems:
                print(f"FAIL {path}: {problem}", file=sys.stderr)
        else:
            print(f"ok   {summary}")
    if failed:
        print(f"audit_elf: {failed} of {len(targets)} binaries failed the audit", file=sys.stderr)
        return 1
    print(f"audit_elf: {len(targets)} binaries pass (glibc <= {args.max_glibc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
