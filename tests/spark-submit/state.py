#!/usr/bin/env python3
"""Readings for tests/spark-submit/run.sh: the Spark master's state (its web UI's JSON), the
operator CLI's `describe --format json`, and the counts QuickStartJob printed.

  state.py workers URL      the number of ALIVE workers (URL: the master's http://HOST:PORT/json/)
  state.py drivers URL      one line per driver the master knows: ID STATE active|completed
  state.py offsets TOTAL    describe's JSON on stdin; prints the stored offsets and log ends, and
                            exits 0 only when every partition's stored offset is its log end and
                            the log ends add up to TOTAL records
  state.py counts FILE...   the sum of the `page<N>: <count>` lines of the FILEs
"""
import json
import re
import sys
import urllib.request

COUNT = re.compile(r"page\d+: (\d+)")
# No proxy for the loopback master, whatever the environment says.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def master(url):
    with OPENER.open(url, timeout=5) as answer:
        return json.load(answer)


def offsets(total):
    text = sys.stdin.read()
    try:
        partitions = sorted(json.loads(text)["partitions"], key=lambda p: p["partition"])
    except (ValueError, KeyError, TypeError):
        print("describe gave no partitions: " + " ".join(text.split())[:300])
        return 2
    stored = [p.get("current_offset") for p in partitions]
    ends = [p.get("log_end_offset") for p in partitions]
    shown = lambda values: ",".join("-" if v is None else str(v) for v in values)  # noqa: E731
    print(f"stored offsets {shown(stored)}, log ends {shown(ends)}, {total} records produced")
    done = (bool(partitions) and all(s is not None and s == e for s, e in zip(stored, ends))
            and sum(e or 0 for e in ends) == total)
    return 0 if done else 1


def counts(paths):
    total = 0
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    match = COUNT.fullmatch(line.strip())
                    if match:
                        total += int(match.group(1))
        except FileNotFoundError:
            pass  # a driver that printed nothing
    print(total)
    return 0


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "workers":
        print(sum(1 for w in master(args[0]).get("workers", []) if w.get("state") == "ALIVE"))
        return 0
    if command == "drivers":
        state = master(args[0])
        for where in ("active", "completed"):
            for driver in state.get(where + "drivers", []):
                print(driver["id"], driver["state"], where)
        return 0
    if command == "offsets":
        return offsets(int(args[0]))
    if command == "counts":
        return counts(args)
    sys.exit(__doc__)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv) if len(sys.argv) > 1 else __doc__)
    except (OSError, ValueError) as e:  # the master not up (yet), or not answering JSON
        print(f"state.py: {e}", file=sys.stderr)
        sys.exit(1)
