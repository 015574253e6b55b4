#!/usr/bin/env python3
"""The documentation against the tree and the build. The pages checked are README.md,
CONTRIBUTING.md and docs/*.md:

- Layout: every path the `## Layout` block of CONTRIBUTING.md lists exists (and each source
  folder it lists by file names every .rs file in it);
- snippets: each code block marked `<!-- readme-check: FILE -->`, on any page, is, line for line,
  the part of FILE between its `README: begin` and `README: end` comments (FILE is compiled or
  run by the build); `<!-- readme-check: FILE#NAME -->` names one of several regions, the part
  between `README: begin NAME` and `README: end NAME`; every region of the examples and of the
  consumer builds (tests/consumers) must be shown somewhere;
- links: every relative link of a page points at an existing file, and a `#anchor` at a heading
  of that page (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens);
- tasks: every `gradle <task>` a page names is defined in build.gradle, gradle/*.gradle or a
  subproject's build file (`task name`, `task("name"`, `chaosTask('name'`, `backgroundTier(t, 'name'`,
  the compat tasks), or is one of Gradle's own;
- paths: every repository path in inline backticks that has a slash and a file extension exists
  (build outputs, home folders, absolute paths and placeholders are skipped);
- sizes: the sizes stated of the jars and of the native libraries inside match the built jars to
  the stated precision, on whichever page states them;
- goals: docs/performance.md's sentence 'Of the N goals the table marks, M were met, ...' counts
  the goal marks of its results table (`+` met, `\~` within noise, `!` missed);
- tiers: CONTRIBUTING.md's tier table has the rows of build.gradle's `def testTiers = [...]`, by
  name and fast/all.

  readme_check.py [--root DIR]            every check (the jars must be built: gradle :jvm:jar :jvm:jar213)
  readme_check.py --layout-only           all but the sizes (no build needed)

Each mismatch is printed, naming the page's claim and what the tree or build has; exit 1.
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
LAYOUT_PAGE = "CONTRIBUTING.md"
EXAMPLE_DIRS = ("examples", "rust/core/examples", "tests/consumers")


def layout_block(readme: str) -> list[str]:
    """The lines of the code block under '## Layout' (of CONTRIBUTING.md)."""
    match = re.search(r"^## Layout\n(?:.*\n)*?```\n((?:.*\n)*?)```", readme, re.MULTILINE)
    if not match:
        raise SystemExit(f"{LAYOUT_PAGE}: no '## Layout' section with a code block")
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


def pages(root: Path) -> dict[str, str]:
    """The pages checked, by their path relative to root."""
    found = {}
    for rel in ["README.md", "CONTRIBUTING.md"] + sorted(
            p.relative_to(root).as_posix() for p in (root / "docs").glob("*.md")):
        if (root / rel).is_file():
            found[rel] = (root / rel).read_text(encoding="utf-8")
    return found


# A region's marker line: 'README: begin' or 'README: end', then a name or not, then only the
# comment's closing characters ('-->', '*/'), so that any comment syntax can carry it.
REGION_MARK = r"^.*README: {which}{name}[^\w\n]*$"
ANY_NAME = r"(?:[^\S\n]+(\w[\w-]*))?"


def regions(text: str) -> tuple[dict[str | None, list[str]], list[str]]:
    """A file's README regions by name (None: the unnamed one), their lines stripped; and what
    is wrong with its markers (a begin without its end, a name used twice)."""
    found: dict[str | None, list[str]] = {}
    problems = []
    for begin in re.finditer(REGION_MARK.format(which="begin", name=ANY_NAME), text, re.MULTILINE):
        name = begin.group(1)
        label = f"'README: begin{' ' + name if name else ''}'"
        if name in found:
            problems.append(f"has {label} twice")
            continue
        # A named region ends at its own name's end; the unnamed one at an end with no name.
        end_name = rf"[^\S\n]+{re.escape(name)}" if name else r"(?![^\S\n]+\w)"
        end = re.compile(REGION_MARK.format(which="end", name=end_name), re.MULTILINE).search(text, begin.end())
        if not end:
            problems.append(f"has {label} with no 'README: end{' ' + name if name else ''}' after it")
            continue
        found[name] = [line.strip() for line in text[begin.end() + 1:end.start()].splitlines()]
    return found, problems


def snippet_problems(root: Path, docs: dict[str, str]) -> list[str]:
    problems = []
    shown: set[tuple[str, str | None]] = set()  # (file, region name) of every checked block
    for page, text in docs.items():
        for target, block in re.findall(r"<!-- readme-check: (\S+) -->\n```\w*\n((?:.*\n)*?)```", text):
            name, _, region_name = target.partition("#")
            region_name = region_name or None
            shown.add((name, region_name))
            source = root / name
            if not source.is_file():
                problems.append(f"{page}'s snippet names {name}, which does not exist")
                continue
            found, _ = regions(source.read_text(encoding="utf-8"))
            if region_name not in found:
                named = ", ".join(sorted(n for n in found if n))
                if region_name is None:
                    problems.append(f"{name} has no 'README: begin' ... 'README: end' region"
                                    + (f" (its named regions, shown as {name}#NAME: {named})" if named else ""))
                else:
                    problems.append(f"{page}'s snippet names {target}, but {name} has no 'README: begin "
                                    f"{region_name}' ... 'README: end {region_name}' region (its named regions: "
                                    f"{named or 'none'})")
                continue
            lines = [line.strip() for line in block.splitlines()]
            compiled = found[region_name]
            if lines != compiled:
                first = next((i for i, (a, b) in enumerate(zip(lines, compiled)) if a != b),
                             min(len(lines), len(compiled)))
                problems.append(f"{page}'s snippet of {target} differs from the file at snippet line {first + 1}: "
                                f"{(lines + [''])[first]!r} vs {(compiled + [''])[first]!r}")
    if not shown:
        problems.append("no page has a <!-- readme-check: FILE --> code block")
    # A compiled example with a README region that no page shows any more has lost its snippet.
    for folder in EXAMPLE_DIRS:
        for source in sorted((root / folder).rglob("*")):
            if not source.is_file():
                continue
            text = source.read_text(encoding="utf-8", errors="replace")
            if "README: begin" not in text:
                continue
            rel = source.relative_to(root).as_posix()
            found, marker_problems = regions(text)
            problems += [f"{rel} {problem}" for problem in marker_problems]
            for region_name in found:
                if (rel, region_name) not in shown:
                    target = rel + (f"#{region_name}" if region_name else "")
                    what = f"region '{region_name}'" if region_name else "README region"
                    problems.append(f"{rel} has a {what}, but no page shows it (<!-- readme-check: {target} -->)")
    return problems


def prose(text: str) -> str:
    """The page without its fenced code blocks (links and inline code are read from prose only)."""
    return re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.MULTILINE | re.DOTALL)


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings."""
    found = set()
    counts: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", prose(text), re.MULTILINE):
        plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
        slug = re.sub(r"[^\w\- ]", "", plain.lower().replace("`", "")).replace(" ", "-")
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def link_problems(root: Path, docs: dict[str, str]) -> list[str]:
    problems = []
    for page, text in docs.items():
        base = (root / page).parent
        for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose(text)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            file = (base / path).resolve() if path else (root / page).resolve()
            if not file.exists():
                problems.append(f"{page} links to {target}, but {path} does not exist")
                continue
            if anchor and file.suffix == ".md":
                if anchor not in anchors(file.read_text(encoding="utf-8")):
                    problems.append(f"{page} links to {target}, but {file.relative_to(root)} has no heading #{anchor}")
    return problems


GRADLE_OWN_TASKS = {"assemble", "build", "check", "clean", "jar", "javadoc", "test", "tasks",
                    "publishToMavenLocal", "classes", "compileJava", "dependencies", "help"}


def gradle_task_names(root: Path) -> tuple[set[str], list[str]]:
    """Task names defined in the build files, and the prefixes of names built at run time."""
    names, prefixes = set(), []
    files = [root / "build.gradle", *sorted((root / "gradle").glob("*.gradle"))]
    files += sorted(p for p in root.glob("*/**/*.gradle")
                    if not any(part in ("build", "vendor", "consumers", "gradle") for part in p.relative_to(root).parts[:-1])
                    or p.parent == root / "gradle")
    for file in files:
        text = file.read_text(encoding="utf-8")
        names |= set(re.findall(r"^\s*(?:def \w+ = )?task\s+(\w+)", text, re.MULTILINE))
        names |= set(re.findall(r"""\b(?:task|chaosTask|auditTask)\(\s*['"](\w+)['"]""", text))
        for quoted in re.findall(r"""\btask\(\s*"([^"]+)\"""", text):
            prefix = quoted.split("$")[0]
            if "$" in quoted and prefix:
                prefixes.append(prefix)
        # Background tiers (gradle/background.gradle): backgroundTier(task, 'name', ...) defines
        # name and nameStart.
        for tier in re.findall(r"backgroundTier\(\s*\w+,\s*'(\w+)'", text):
            names |= {tier, tier + "Start"}
        # The compat tasks: [name: 'compat', ...] entries turned into tasks by task(spec.name).
        names |= set(re.findall(r"\[name: '(\w+)'", text))
        if re.search(r"task\(\"\$\{spec\.name\}Start\"\)", text):
            names |= {n + "Start" for n in re.findall(r"\[name: '(\w+)'", text)}
    return names, prefixes


def task_problems(root: Path, docs: dict[str, str]) -> list[str]:
    problems = []
    names, prefixes = gradle_task_names(root)
    known = names | GRADLE_OWN_TASKS
    for page, text in docs.items():
        for command in re.findall(r"\bgradle((?:[^\S\n]+(?:-[^\s`]+|:?[\w:]+)(?=[\s`]|$))+)", text):
            for word in command.split():
                if word.startswith("-"):
                    continue
                task = word.rsplit(":", 1)[-1]
                if not task or task in known or any(task.startswith(p) for p in prefixes):
                    continue
                problems.append(f"{page} names `gradle {word}`, but no build file defines a task {task}")
    return problems


# Paths that are not the repository's: build outputs, paths inside the jar, home folders,
# absolute paths, placeholders.
NOT_IN_TREE = re.compile(r"^(?:build/|target/|native/|META-INF/|~|/|\.\.\.|\$)|[<>*{}$]|\.\.\.")


def path_problems(root: Path, docs: dict[str, str]) -> list[str]:
    problems = []
    for page, text in docs.items():
        for span in re.findall(r"`([^`\n]+)`", prose(text)):
            for word in span.split():
                word = word.rstrip(".,;:)")
                if "/" not in word or NOT_IN_TREE.search(word) or "://" in word:
                    continue
                if not re.fullmatch(r"[\w.-]+(?:/[\w.-]+)+\.[A-Za-z]\w*", word):
                    continue
                base = (root / page).parent
                if not (root / word).exists() and not (base / word).exists():
                    problems.append(f"{page} names `{word}`, which does not exist")
    return problems


def off(stated_mb: float, size: int) -> bool:
    """A stated size is wrong when the built one is more than SIZE_TOLERANCE away: every code
    change moves the bytes a little, a stale figure (2 MB for 3 MB) moves them a lot."""
    return abs(size / MB - stated_mb) > SIZE_TOLERANCE * stated_mb


def stated(docs: dict[str, str], pattern: str, what: str) -> float:
    for text in docs.values():
        match = re.search(pattern, text)
        if match:
            return float(match.group(1))
    raise LookupError(f"no page states {what} as this check reads it ({pattern!r}): update tests/readme/readme_check.py with it")


def size_problems(root: Path, docs: dict[str, str]) -> list[str]:
    problems = []
    version = re.search(r'^\[workspace\.package\]\n(?:.*\n)*?version\s*=\s*"([^"]+)"',
                        (root / "Cargo.toml").read_text(), re.MULTILINE)
    if not version:
        return ["Cargo.toml: no [workspace.package] version"]
    jars = [root / f"jvm/build/libs/offsetkeeper_{scala}-{version.group(1)}.jar" for scala in ("2.12", "2.13")]
    try:
        jar_mb = stated(docs, r"jars into `jvm/build/libs/` \(([\d.]+) MB each\)", "the jars' size")
        libs = {platform: stated(docs, rf"`native/{platform}/liboffsetkeeper_jni\.so` \(([\d.]+) MB\)",
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
            problems.append(f"the docs say the jars are {jar_mb} MB; {jar.name} is {actual} MB ({jar.stat().st_size} bytes)")
        with zipfile.ZipFile(jar) as z:
            for platform, mb in libs.items():
                name = f"native/{platform}/liboffsetkeeper_jni.so"
                try:
                    size = z.getinfo(name).file_size
                except KeyError:
                    problems.append(f"{jar.name} has no {name}")
                    continue
                if off(mb, size):
                    problems.append(f"the docs say {name} is {mb} MB; in {jar.name} it is {round(size / MB, 1)} MB ({size} bytes)")
    return problems


GOALS_PAGE = "docs/performance.md"
GOALS_SENTENCE = re.compile(r"Of the (\d+) goals the table marks, (\d+) were met, (\d+|no) within\s+noise"
                            r"\s+and\s+(\d+|none) missed")
# A goal's mark ends its ratio cell, after the interval: '1.57x 1.48-1.87\~', '0.97x 0.94-1.07+f'.
GOAL_MARK = re.compile(r"\d(\+|\\~|!)f?$")


def goal_problems(docs: dict[str, str]) -> list[str]:
    """Each sentence 'Of the N goals the table marks, ...' against the goal marks of the result
    tables between it and the sentence before it (one sentence per store's table)."""
    text = docs.get(GOALS_PAGE)
    if text is None:
        return []
    body = prose(text)
    sentences = list(GOALS_SENTENCE.finditer(body))
    if not sentences:
        return [f"{GOALS_PAGE}: no sentence 'Of the N goals the table marks, M were met, K within noise and "
                f"none missed' as this check reads it ({GOALS_SENTENCE.pattern!r})"]
    problems = []
    start = 0
    for stated in sentences:
        counts = {"+": 0, "\\~": 0, "!": 0}
        for line in body[start:stated.start()].splitlines():
            if re.match(r"^\|\s*\d+\s*\|", line):  # a row of a results table: | P | operation | ...
                for cell in line.strip().strip("|").split("|"):
                    mark = GOAL_MARK.search(cell.strip())
                    if mark:
                        counts[mark.group(1)] += 1
        start = stated.end()
        table = (sum(counts.values()), counts["+"], counts["\\~"], counts["!"])
        said = tuple(0 if n in ("no", "none") else int(n) for n in stated.groups())
        if said != table:
            problems.append(f"{GOALS_PAGE} says {said[0]} goals, {said[1]} met, {said[2]} within noise, "
                            f"{said[3]} missed; the table before it marks {table[0]}: {table[1]} met (+), "
                            f"{table[2]} within noise (~), {table[3]} missed (!)")
    return problems


TIER_PAGE = "CONTRIBUTING.md"


def tier_problems(root: Path, docs: dict[str, str]) -> list[str]:
    """CONTRIBUTING.md's tier table against build.gradle's `def testTiers = [...]`: the same tiers,
    each 'fast' or 'all' alike."""
    build = (root / "build.gradle").read_text(encoding="utf-8")
    listed = re.search(r"^def testTiers = \[\n((?:.*\n)*?)\]", build, re.MULTILINE)
    if not listed:
        return ["build.gradle: no 'def testTiers = [' ... ']' list as this check reads it"]
    built = dict(re.findall(r"^\s*\[\s*'([^']+)'\s*,\s*'(fast|all)'", listed.group(1), re.MULTILINE))
    if len(built) < 5:
        return [f"build.gradle: only {len(built)} tiers parsed from testTiers; has its format changed?"]
    section = re.search(r"^## Test tiers\n((?:(?!^## ).*\n)*)", docs.get(TIER_PAGE, ""), re.MULTILINE)
    rows = re.findall(r"^\| `([^`]+)` \| (\w+) \|", section.group(1) if section else "", re.MULTILINE)
    if not rows:
        return [f"{TIER_PAGE}: no tier table ('| `tier` | fast/all | ... |') under '## Test tiers'"]
    table = dict(rows)
    problems = []
    for name, kind in built.items():
        if name not in table:
            problems.append(f"{TIER_PAGE}'s tier table has no row for tier {name} ({kind} in build.gradle's testTiers)")
        elif table[name] != kind:
            problems.append(f"{TIER_PAGE}'s tier table says tier {name} is '{table[name]}'; build.gradle's "
                            f"testTiers says '{kind}'")
    for name in table:
        if name not in built:
            problems.append(f"{TIER_PAGE}'s tier table lists tier {name}, which build.gradle's testTiers does not")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    parser.add_argument("--layout-only", action="store_true")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    docs = pages(root)
    problems = layout_problems(root, docs.get(LAYOUT_PAGE, ""))
    problems += snippet_problems(root, docs) + link_problems(root, docs)
    problems += task_problems(root, docs) + path_problems(root, docs)
    problems += goal_problems(docs) + tier_problems(root, docs)
    if not args.layout_only:
        problems += size_problems(root, docs)
    for problem in problems:
        print(f"docs check: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"docs check: {len(docs)} pages: Layout paths, snippets, links, gradle tasks, paths, goals, tiers"
          + ("" if args.layout_only else " and sizes") + " match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
