#!/usr/bin/env python3
"""The README against the tree and the build: every path its Layout lists exists (and each
source folder it lists by file names every .rs file in it), each code block marked
`<!-- readme-check: FILE -->` is, line for line, the part of FILE between its `README: begin` and
`README: end` comments (FILE is compiled by the build), and the sizes it states of the jars and
of the native libraries inside match the built jars to the stated precision.

  readme_check.py [--root DIR]            both checks (the jars must be built: gradle :jvm:jar :jvm:jar213)
  readme_check.py --layout-only           all but the sizes (no build needed)

Each mismatch is printed, naming the README's claim and what the tree or build has; exit 1.
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path

MB = 1_000_000
SIZE_TOLERANCE = 0.05
# A file name standing alone (not the end of a path, which the path check below takes).
FILE_NAME = re.compile(r"(?<![/\w.-])[\w.-]+\.(?:rs|sh|py|java|gradle|toml|scala)\b")
SUBFOLDER = re.compile(r"(?:^|\s)([\w-]+)/:")


def layout_block(readme: str) -> list[str]:
    """The lines of the code block under '## Layout'."""
    match = re.search(r"^## Layout\n(?:.*\n)*?```\n((?:.*\n)*?)```", readme, re.MULTILINE)
    if not match:
        raise SystemExit("README: no '## Layout' section with a code block")
    return match.group(1).splitlines()


def layout_problems(root: Path, readme: str) -> list[str]:
    problems = []
    entries: list[tuple[str, list[str]]] = []  # a listed path and its description lines
    for line in layout_block(readme):
        if not line.strip():
            continue
        if not line.startswith(" "):
            path, _, rest = line.partition(" ")
            entries.append((path, [rest]))
        elif entries:
            entries[-1][1].append(line)
    if len(entries) < 5:
        problems.append(f"Layout: only {len(entries)} entries parsed; has its format changed?")
    for path, lines in entries:
        base = root / path.rstrip("/")
        if not base.exists():
            problems.append(f"Layout lists {path}, which does not exist")
            continue
        folder = base
        for line in lines:
            # 'kafka/: ... (a.rs, b.rs)': the names that follow are in that subfolder.
            sub = SUBFOLDER.search(line)
            if sub:
                candidates = [base / sub.group(1), base / "src" / sub.group(1)]
                found = next((c for c in candidates if c.is_dir()), None)
                if found is None:
                    problems.append(f"Layout lists {sub.group(1)}/ under {path}, which has no such folder")
                    continue
                folder = found
                named = set(FILE_NAME.findall(line[sub.end():]))
                # A continuation line with no folder of its own still belongs to this one.
                following = lines[lines.index(line) + 1:]
                for more in following:
                    if SUBFOLDER.search(more):
                        break
                    named |= set(FILE_NAME.findall(more))
                present = {p.name for p in folder.glob("*.rs")} - {"mod.rs"}
                for name in sorted(present - named):
                    problems.append(f"Layout's {path} {sub.group(1)}/ does not name {folder.relative_to(root)}/{name}")
            for name in FILE_NAME.findall(line):
                places = [folder / name, base / name, root / name]
                if not any(p.exists() for p in places) and not (base.is_dir() and any(base.rglob(name))):
                    problems.append(f"Layout names {name} under {path}, found neither there nor at the root")
            for rel in re.findall(r"\b(?:[\w.-]+/)+[\w.-]+\.\w+\b", line):
                if not (root / rel).exists() and not (base / rel).exists():
                    problems.append(f"Layout names {rel} under {path}, which does not exist")
    return problems


def snippet_problems(root: Path, readme: str) -> list[str]:
    problems = []
    blocks = re.findall(r"<!-- readme-check: (\S+) -->\n```\w*\n((?:.*\n)*?)```", readme)
    if not blocks:
        problems.append("README has no <!-- readme-check: FILE --> code block")
    for name, block in blocks:
        source = root / name
        if not source.is_file():
            problems.append(f"README's snippet names {name}, which does not exist")
            continue
        text = source.read_text(encoding="utf-8")
        region = re.search(r"README: begin\n((?:.*\n)*?).*README: end", text)
        if not region:
            problems.append(f"{name} has no 'README: begin' ... 'README: end' region")
            continue
        shown = [line.strip() for line in block.splitlines()]
        compiled = [line.strip() for line in region.group(1).splitlines()]
        if shown != compiled:
            first = next((i for i, (a, b) in enumerate(zip(shown, compiled)) if a != b),
                         min(len(shown), len(compiled)))
            problems.append(f"README's snippet of {name} differs from the file at snippet line {first + 1}: "
                            f"{(shown + [''])[first]!r} vs {(compiled + [''])[first]!r}")
    return problems


def off(stated_mb: float, size: int) -> bool:
    """A stated size is wrong when the built one is more than SIZE_TOLERANCE away: every code
    change moves the bytes a little, a stale figure (2 MB for 3 MB) moves them a lot."""
    return abs(size / MB - stated_mb) > SIZE_TOLERANCE * stated_mb


def stated(readme: str, pattern: str, what: str) -> float:
    match = re.search(pattern, readme)
    if not match:
        raise LookupError(f"README no longer states {what} as this check reads it ({pattern!r}): update tests/readme/readme_check.py with it")
    return float(match.group(1))


def size_problems(root: Path, readme: str) -> list[str]:
    problems = []
    version = re.search(r'^\[workspace\.package\]\n(?:.*\n)*?version\s*=\s*"([^"]+)"',
                        (root / "Cargo.toml").read_text(), re.MULTILINE)
    if not version:
        return ["Cargo.toml: no [workspace.package] version"]
    jars = [root / f"jvm/build/libs/offsetkeeper_{scala}-{version.group(1)}.jar" for scala in ("2.12", "2.13")]
    try:
        jar_mb = stated(readme, r"jars into `jvm/build/libs/` \(([\d.]+) MB each\)", "the jars' size")
        libs = {platform: stated(readme, rf"`native/{platform}/liboffsetkeeper_jni\.so` \(([\d.]+) MB\)",
                                 f"the {platform} library's size")
                for platform in ("linux-x86_64", "linux-aarch64")}
    except LookupError as err:
        return [str(err)]
    for jar in jars:
        if not jar.is_file():
            problems.append(f"{jar.relative_to(root)} is missing: build it first (gradle :jvm:jar :jvm:jar213)")
            continue
        actual = round(jar.stat().st_size / MB, 1)
        if off(jar_mb, jar.stat().st_size):
            problems.append(f"README says the jars are {jar_mb} MB; {jar.name} is {actual} MB ({jar.stat().st_size} bytes)")
        with zipfile.ZipFile(jar) as z:
            for platform, mb in libs.items():
                name = f"native/{platform}/liboffsetkeeper_jni.so"
                try:
                    size = z.getinfo(name).file_size
                except KeyError:
                    problems.append(f"{jar.name} has no {name}")
                    continue
                if off(mb, size):
                    problems.append(f"README says {name} is {mb} MB; in {jar.name} it is {round(size / MB, 1)} MB ({size} bytes)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    parser.add_argument("--layout-only", action="store_true")
    args = parser.parse_args(argv)
    readme = (args.root / "README.md").read_text(encoding="utf-8")
    problems = layout_problems(args.root, readme) + snippet_problems(args.root, readme)
    if not args.layout_only:
        problems += size_problems(args.root, readme)
    for problem in problems:
        print(f"readme check: {problem}", file=sys.stderr)
    if problems:
        return 1
    print("readme check: Layout paths, snippets" + ("" if args.layout_only else " and sizes") + " match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
