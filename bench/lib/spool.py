#!/usr/bin/python3 -IS
"""The benchmark's way into the host agent's spool (bench/run.sh, rows 6, 8, 11).

    spool.py enqueue [--events]   texts on stdin, NUL-separated, spooled in order
                                  (the alerts' queue, or the ban tool's), as
                                  delivery.send_alert does, with the settings of
                                  HOSTGUARD_ROOT (its NOTIFY_SPOOL_MAX)
    spool.py report               JSON: {"pending": N, "dead": [reason, ...]}

Uses the package in scripts/ (what a host runs); HOSTGUARD_ROOT must be set.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "scripts"))

from hostguard import settings  # noqa: E402
from hostguard.notify import delivery, spool  # noqa: E402


def main(argv: list[str]) -> int:
    if not os.environ.get("HOSTGUARD_ROOT"):
        print("spool.py: HOSTGUARD_ROOT must be set (never the host's own spool)", file=sys.stderr)
        return 64
    loaded = settings.load()
    box = delivery.own_spool(loaded)
    if argv[:1] == ["enqueue"] and argv[1:] in ([], ["--events"]):
        queue = spool.EVENTS if argv[1:] else spool.ALERTS
        for text in sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0"):
            if text:
                box.enqueue(delivery.as_posted(loaded, text), None, queue)
        return 0
    if argv == ["report"]:
        print(json.dumps({"pending": box.pending(), "dead": [d.reason for d in box.dead_letters()]}))
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
