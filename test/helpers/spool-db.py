#!/usr/bin/env python3
"""Test helper: the notifier's spool database (HOSTGUARD_ROOT/var/spool/hostguard/spool.db).

Writes go through the agent's own spool (scripts/hostguard/notify/spool.py), so a
message is spooled exactly as a monitor spools it; reads are plain sqlite3.

    spool-db.py enqueue TEXT [CHANNEL [QUEUE]]   spools one message (queue 0 alerts, 1 ban tool)
    spool-db.py enqueue-many N SIZE PREFIX       spools N alerts PREFIX-<i> padded to SIZE characters;
                                                 prints the most messages seen waiting after one
    spool-db.py pending                          messages waiting or claimed (not merged parts)
    spool-db.py dead                             number of dead letters
    spool-db.py reasons                          each dead letter's reason, without its time stamp
    spool-db.py dropped                          ban-tool messages dropped, not yet announced
    spool-db.py get KEY                          a delivery state value (empty when unset)
    spool-db.py set KEY VALUE                    sets one
    spool-db.py refusal                          the webhook's refusal: IDENTITY SINCE NEXT_PROBE INTERVAL WHY
    spool-db.py probe-due                        makes a refused webhook's next probe due now
    spool-db.py future-post SECONDS              stamps the last post SECONDS ahead on the monotonic clock
    spool-db.py checkpoint                       moves the write-ahead log into spool.db and removes it (the
                                                 programs end without closing the database: the log stays)
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))


def database() -> str:
    return os.path.join(os.environ["HOSTGUARD_ROOT"], "var/spool/hostguard/spool.db")


def query(sql: str, *args: object) -> list[tuple[object, ...]]:
    db = sqlite3.connect(database(), timeout=10)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def put(key: str, value: str) -> None:
    from hostguard import settings
    from hostguard.notify import spool

    spool.Spool(settings.load().notify_spool_max).put(key, value)


def get(key: str) -> str:
    rows = query("SELECT value FROM state WHERE key = ?", key)
    return str(rows[0][0]) if rows else ""


def main(argv: list[str]) -> int:
    verb = argv[0]
    if verb == "enqueue":
        from hostguard import settings
        from hostguard.notify import delivery

        loaded = settings.load()
        channel = argv[2] if len(argv) > 2 and argv[2] else None
        queue = int(argv[3]) if len(argv) > 3 else 0
        delivery.own_spool(loaded).enqueue(delivery.as_posted(loaded, argv[1]), channel, queue)
    elif verb == "enqueue-many":
        from hostguard import settings
        from hostguard.notify import spool

        queue = spool.Spool(settings.load().notify_spool_max)
        most = 0
        for i in range(int(argv[1])):
            queue.enqueue(f"{argv[3]}-{i}".ljust(int(argv[2]), "."))
            most = max(most, queue.pending())
        print(most)
    elif verb == "checkpoint":
        db = sqlite3.connect(database(), timeout=10)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
    elif verb == "pending":
        print(query("SELECT count(*) FROM message WHERE merged_into IS NULL")[0][0])
    elif verb == "dead":
        print(query("SELECT count(*) FROM dead WHERE merged_into IS NULL")[0][0])
    elif verb == "reasons":
        for (reason,) in query("SELECT reason FROM dead WHERE merged_into IS NULL ORDER BY id"):
            print(str(reason).split(" ", 2)[2])
    elif verb == "dropped":
        print(get("dropped") or "0")
    elif verb == "get":
        print(get(argv[1]))
    elif verb == "set":
        put(argv[1], argv[2])
    elif verb == "refusal":
        for row in query("SELECT identity, since, next_probe, interval, why FROM refusal"):
            print(" ".join(str(value) for value in row))
    elif verb == "probe-due":
        db = sqlite3.connect(database(), timeout=10)
        try:
            db.execute("UPDATE refusal SET next_probe = ?", (int(time.time()),))
            db.commit()
        finally:
            db.close()
    elif verb == "future-post":
        put("last_post", str(int((time.monotonic() + float(argv[1])) * 1000)))
    else:
        print(__doc__, file=sys.stderr)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
