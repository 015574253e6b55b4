#!/usr/bin/env python3
"""A Maven Central bundle (the zip the Central Publisher Portal takes as a "bundle" upload, made
by `gradle centralBundle`) against Central's published requirements
(https://central.sonatype.org/publish/requirements/). The zip's root is a Maven repository;
each folder <groupId path>/<artifactId>/<version>/ holding files is an artifact, and must have:

- <artifactId>-<version>.pom, .jar, -sources.jar and -javadoc.jar;
- for each file (checksums and signatures aside) a .md5 and a .sha1 checksum, and any .sha256
  or .sha512 present, each matching the file;
- with --require-signatures, for each such file an ASCII-armored .asc that `gpg --verify`
  accepts (gpg reads GNUPGHOME when set); without it, a .asc present must at least be one;
- a POM (namespace-aware) whose groupId, artifactId and version are the folder's, no -SNAPSHOT,
  with a name, description, url, licenses/license/name, developers/developer (name or id),
  scm/url and scm/connection;
- a javadoc jar that is a zip with at least one .html page, a sources jar that is a zip, and a
  main jar that is a zip carrying the JNI library of each platform (NATIVE_LIBRARIES: where
  jvm/build.gradle's nativeResource puts them).

  check_bundle.py BUNDLE.zip [--require-signatures]

Each problem is printed on its own line; exit 1. Python 3.11 standard library, and gpg for
--require-signatures.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import posixpath
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

MAVEN_NS = "http://maven.apache.org/POM/4.0.0"
REQUIRED_CHECKSUMS = ("md5", "sha1")
OPTIONAL_CHECKSUMS = ("sha256", "sha512")
SIDE_SUFFIXES = tuple(f".{ext}" for ext in REQUIRED_CHECKSUMS + OPTIONAL_CHECKSUMS) + (".asc",)
NATIVE_LIBRARIES = ("native/linux-x86_64/liboffsetkeeper_jni.so", "native/linux-aarch64/liboffsetkeeper_jni.so")
ARMOR = b"-----BEGIN PGP SIGNATURE-----"


def zip_names(where: str, data: bytes, problems: list[str]) -> list[str] | None:
    """The file names of a jar, or None (and a problem) when it is no valid zip."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as jar:
            bad = jar.testzip()
            if bad is not None:
                problems.append(f"{where}: entry {bad} fails its CRC check")
            return [info.filename for info in jar.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError) as err:
        problems.append(f"{where}: not a valid zip ({err})")
        return None


def pom_problems(where: str, data: bytes, group_id: str, artifact_id: str, version: str) -> list[str]:
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        return [f"{where}: not well-formed XML ({err})"]
    namespace, _, local = root.tag[1:].partition("}") if root.tag.startswith("{") else ("", "", root.tag)
    problems = []
    if local != "project":
        return [f"{where}: the root element is <{local}>, not <project>"]
    if namespace not in ("", MAVEN_NS):
        problems.append(f"{where}: namespace {namespace}, not Maven's {MAVEN_NS}")

    def path(steps: str) -> str:
        return "/".join(f"{{{namespace}}}{step}" if namespace else step for step in steps.split("/"))

    def text(element: ET.Element, steps: str) -> str:
        found = element.find(path(steps))
        return (found.text or "").strip() if found is not None else ""

    # groupId and version may come from the parent, as Maven reads them.
    stated = {"groupId": text(root, "groupId") or text(root, "parent/groupId"),
              "artifactId": text(root, "artifactId"),
              "version": text(root, "version") or text(root, "parent/version")}
    for field, expected in (("groupId", group_id), ("artifactId", artifact_id), ("version", version)):
        if stated[field] != expected:
            hint = " (the zip's root must be the repository's root)" if field == "groupId" else ""
            problems.append(f"{where}: {field} is '{stated[field]}', the folder says '{expected}'{hint}")
    if stated["version"].upper().endswith("-SNAPSHOT"):
        problems.append(f"{where}: version {stated['version']} is a snapshot; Central takes releases only")
    for field in ("name", "description", "url"):
        if not text(root, field):
            problems.append(f"{where}: no <{field}>")
    licenses = root.findall(path("licenses/license"))
    if not licenses:
        problems.append(f"{where}: no <licenses><license>")
    for n, license_ in enumerate(licenses, 1):
        if not text(license_, "name"):
            problems.append(f"{where}: license {n} has no <name>")
    developers = root.findall(path("developers/developer"))
    if not developers:
        problems.append(f"{where}: no <developers><developer>")
    for n, developer in enumerate(developers, 1):
        if not (text(developer, "name") or text(developer, "id")):
            problems.append(f"{where}: developer {n} has neither <name> nor <id>")
    for field in ("url", "connection"):
        if not text(root, f"scm/{field}"):
            problems.append(f"{where}: no <scm><{field}>")
    return problems


def gpg_verify(files: list[tuple[str, bytes, bytes]]) -> list[str]:
    """Each (name, data, signature) through `gpg --verify`: a problem per signature gpg does not
    accept as good (GNUPGHOME, when set, picks the keyring)."""
    gpg = shutil.which("gpg")
    if gpg is None:
        return ["gpg is not on PATH: --require-signatures needs it (GnuPG)"]
    problems = []
    with tempfile.TemporaryDirectory(prefix="check_bundle-") as tmp:
        for n, (name, data, signature) in enumerate(files):
            target = Path(tmp, f"{n}-{posixpath.basename(name)}")
            target.write_bytes(data)
            Path(f"{target}.asc").write_bytes(signature)
            result = subprocess.run([gpg, "--batch", "--status-fd", "1", "--verify", f"{target}.asc", str(target)],
                                    capture_output=True, text=True, env=os.environ)
            status = [line[len("[GNUPG:] "):] for line in result.stdout.splitlines() if line.startswith("[GNUPG:] ")]
            if result.returncode != 0 or not any(line.startswith("VALIDSIG ") for line in status):
                why = [line for line in status if line.split(" ", 1)[0] in
                       ("BADSIG", "ERRSIG", "NO_PUBKEY", "EXPKEYSIG", "REVKEYSIG", "EXPSIG", "NODATA")]
                detail = "; ".join(why) or (result.stderr.strip().splitlines() or ["no output"])[-1]
                problems.append(f"{name}.asc: gpg does not verify it (exit {result.returncode}: {detail})")
    return problems


def check(bundle: Path, require_signatures: bool) -> tuple[list[str], str]:
    """The problems of the bundle, and a line saying what was checked."""
    try:
        archive = zipfile.ZipFile(bundle)
    except (zipfile.BadZipFile, OSError) as err:
        return [f"{bundle}: not a readable zip ({err})"], "nothing"
    problems: list[str] = []
    members: dict[str, bytes] = {}
    with archive:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir():
                continue
            if name.startswith("/") or "\\" in name or ".." in name.split("/"):
                problems.append(f"{name}: not a plain relative path")
                continue
            if name in members:
                problems.append(f"{name}: in the bundle twice")
            try:
                members[name] = archive.read(info)  # checks the entry's CRC
            except (zipfile.BadZipFile, OSError, NotImplementedError) as err:
                problems.append(f"{name}: unreadable in the bundle ({err})")

    folders: dict[str, dict[str, bytes]] = {}
    for name, data in members.items():
        folder, _, file_name = name.rpartition("/")
        folders.setdefault(folder, {})[file_name] = data
    if not folders:
        problems.append(f"{bundle}: holds no files")

    coordinates, files, checksums, signatures = [], 0, set(), []
    for folder, content in sorted(folders.items()):
        parts = folder.split("/") if folder else []
        if len(parts) < 3:
            problems += [f"{posixpath.join(folder, file_name)}: not in a folder <groupId path>/<artifactId>/"
                         "<version>/ (the zip's root must be the repository's root)" for file_name in sorted(content)]
            continue
        *group_parts, artifact_id, version = parts
        group_id = ".".join(group_parts)
        coordinates.append(f"{group_id}:{artifact_id}:{version}")
        prefix = f"{artifact_id}-{version}"
        main = {"POM": f"{prefix}.pom", "jar": f"{prefix}.jar", "sources jar": f"{prefix}-sources.jar",
                "javadoc jar": f"{prefix}-javadoc.jar"}
        for what, file_name in main.items():
            if file_name not in content:
                problems.append(f"{folder}/: no {what} ({file_name})")

        for file_name in sorted(content):
            where = f"{folder}/{file_name}"
            if file_name.endswith(SIDE_SUFFIXES):
                # A checksum or signature of a file the folder lacks (a .asc's own checksums are allowed).
                if file_name.rpartition(".")[0] not in content:
                    problems.append(f"{where}: belongs to {file_name.rpartition('.')[0]}, which the folder lacks")
                continue
            if not file_name.startswith(prefix):
                problems.append(f"{where}: not named {prefix}[-classifier].<ext>")
            data = content[file_name]
            files += 1
            for ext in REQUIRED_CHECKSUMS + OPTIONAL_CHECKSUMS:
                side = f"{file_name}.{ext}"
                if side not in content:
                    if ext in REQUIRED_CHECKSUMS:
                        problems.append(f"{where}: no .{ext} checksum")
                    continue
                checksums.add(ext)
                words = content[side].decode("ascii", "replace").split()
                actual = hashlib.new(ext, data, usedforsecurity=False).hexdigest()
                if not words or words[0].lower() != actual:
                    problems.append(f"{where}.{ext}: says '{words[0] if words else ''}', the file's {ext} is {actual}")
            signature = content.get(f"{file_name}.asc")
            if signature is None:
                if require_signatures:
                    problems.append(f"{where}: no .asc signature")
            elif not signature.lstrip().startswith(ARMOR):
                problems.append(f"{where}.asc: not an ASCII-armored signature ({ARMOR.decode()})")
            else:
                signatures.append((where, data, signature))

        if main["POM"] in content:
            problems += pom_problems(f"{folder}/{main['POM']}", content[main["POM"]], group_id, artifact_id, version)
        if main["javadoc jar"] in content:
            where = f"{folder}/{main['javadoc jar']}"
            names = zip_names(where, content[main["javadoc jar"]], problems)
            if names is not None and not any(n.endswith(".html") for n in names):
                problems.append(f"{where}: no .html page")
        if main["sources jar"] in content:
            zip_names(f"{folder}/{main['sources jar']}", content[main["sources jar"]], problems)
        if main["jar"] in content:
            where = f"{folder}/{main['jar']}"
            names = zip_names(where, content[main["jar"]], problems)
            if names is not None:
                problems += [f"{where}: no {library}" for library in NATIVE_LIBRARIES if library not in names]

    if require_signatures and signatures:
        problems += gpg_verify(signatures)
    signed = (f"{len(signatures)} signatures through gpg --verify" if require_signatures
              else f"{len(signatures)} signatures present, not verified (--require-signatures verifies them)")
    summed = "/".join(ext for ext in REQUIRED_CHECKSUMS + OPTIONAL_CHECKSUMS if ext in checksums) or "no"
    summary = (f"{len(coordinates)} artifacts ({', '.join(coordinates) or 'none'}), {files} files: POM, jar, "
               f"sources and javadoc jars present; {summed} checksums; "
               f"{signed}; POM coordinates, no snapshot, name, description, url, license, developer, scm; "
               f"javadoc HTML; {' and '.join(NATIVE_LIBRARIES)} in the jars")
    return problems, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle", type=Path, help="the bundle zip (build/central/offsetkeeper-<version>-bundle.zip)")
    parser.add_argument("--require-signatures", action="store_true",
                        help="every file needs a .asc that gpg verifies (GNUPGHOME picks the keyring)")
    args = parser.parse_args(argv)
    problems, summary = check(args.bundle, args.require_signatures)
    for problem in problems:
        print(f"check_bundle: {problem}", file=sys.stderr)
    if problems:
        print(f"check_bundle: {args.bundle}: {len(problems)} problem(s); checked {summary}", file=sys.stderr)
        return 1
    print(f"check_bundle: {args.bundle}: OK: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
