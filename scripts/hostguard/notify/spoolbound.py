"""The spool's bounds: each queue holds at most NOTIFY_SPOOL_MAX messages
waiting and BYTES_MAX bytes of their text. Over either, ban-tool messages
are dropped oldest first and alerts merged, never dropped (a full merged
message starts a new one; when no two fit, the newer part is cut with a
marker, so both bounds hold whatever the sizes). A burst of ban-tool
messages (BURST or more waiting) goes merged, MERGE_MAX to a message. Both
merge by one rule, coalesce. Every function works inside the caller's
transaction.
"""

from __future__ import annotations

import itertools
import sqlite3
import time

from .. import log
from .message import CUT_MARKER, FIRING, NOTICE

ALERTS = 0
EVENTS = 1
# A burst: at least this many ban-tool messages waiting go merged, at most
# MERGE_MAX to a message (the chat service takes about one message a second).
BURST = 10
MERGE_MAX = 50
# A merged message stays this far below the chat service's text limit.
MERGE_CHARS = 30000
# The byte bound of each queue's waiting text, and of the dead letters'.
BYTES_MAX = 8 << 20


def cut_to(text: str, room: int) -> str:
    """TEXT in at most ROOM characters, the cut marked."""
    if len(text) <= room:
        return text
    return text[: max(0, room - len(CUT_MARKER))] + CUT_MARKER[:room]


def waiting(db: sqlite3.Connection, queue: int) -> tuple[int, int]:
    """How many messages of QUEUE wait, and the bytes of their text."""
    row = db.execute(
        "SELECT count(*), coalesce(sum(length(CAST(text AS BLOB))), 0) FROM message"
        " WHERE queue = ? AND merged_into IS NULL AND claimed = 0",
        (queue,),
    ).fetchone()
    return int(row[0]), int(row[1])


def bound(db: sqlite3.Connection, queue: int, spool_max: int) -> int:
    """Drops (ban-tool messages: how many, returned) or merges (alerts) the oldest until both bounds hold."""
    count, size = waiting(db, queue)
    dropped = merged = cut = 0
    while count > 1 and (count > spool_max or size > BYTES_MAX):
        if queue == EVENTS:
            dropped += _drop_oldest(db, max(1, count - spool_max))
        elif count > spool_max:
            step = coalesce(db, ALERTS, count - spool_max, MERGE_CHARS, cut=True)
            if step == 0:
                break
            merged += step
        else:
            # Only the bytes are over: merging whole texts would not lessen them.
            if coalesce(db, ALERTS, 1, MERGE_CHARS, whole=False, cut=True) == 0:
                break
            cut += 1
        count, size = waiting(db, queue)
    if merged or cut:
        how = f"merged {merged + 1} of the oldest alerts into fewer messages" if merged else ""
        if cut:
            how += (" and " if how else "") + f"cut {cut + 1} of the oldest alerts (each cut marked)"
        log.warn(
            f"spool over its bound (NOTIFY_SPOOL_MAX={spool_max}, {BYTES_MAX} bytes): {how};"
            " alerts are never dropped whole"
        )
    return dropped


def _drop_oldest(db: sqlite3.Connection, count: int) -> int:
    rows = db.execute(
        "SELECT id, parts FROM message WHERE queue = ? AND merged_into IS NULL AND claimed = 0 ORDER BY id LIMIT ?",
        (EVENTS, count),
    ).fetchall()
    db.executemany("DELETE FROM message WHERE id = ? OR merged_into = ?", [(r[0], r[0]) for r in rows])
    return sum(int(r[1]) for r in rows)


def coalesce(
    db: sqlite3.Connection, queue: int, merges: int, limit: int, *, whole: bool = True, cut: bool = False
) -> int:
    """The one merge rule: waiting messages of QUEUE, oldest first, merge at most MERGES times, each the
    newer appended to the older a blank line apart (merge_pair); how many merges were made.

    Which: the alerts without a channel override, where one that would pass LIMIT characters leaves the
    older full and starts a new message; or (a burst) the ban-tool messages from the oldest up to the first
    with a channel, at most MERGE_MAX, into one message that ends before the first that would pass LIMIT.
    WHOLE: whole texts merge while they fit in LIMIT. CUT: then, while merges are wanted, the two oldest go
    as one within LIMIT, each part's cut marked (CUT_MARKER). Nothing is lost or sent twice: a merged
    message carries its parts, delivered or buried with it, in pieces when longer than the format's limit
    (delivery._deliver_merged).
    """
    rows = _mergeable(db, queue)
    merged = target = 0
    while whole and merged < merges and target + 1 < len(rows):
        (first, first_len), (second, second_len) = rows[target], rows[target + 1]
        if first_len + 2 + second_len <= limit:
            merge_pair(db, first, second, limit)
            rows[target] = (first, first_len + 2 + second_len)
            del rows[target + 1]
            merged += 1
        elif queue == EVENTS:
            break
        else:
            target += 1
    while cut and merged < merges and len(rows) >= 2:
        merge_pair(db, rows[0][0], rows[1][0], limit)
        del rows[1]
        merged += 1
    return merged


def _mergeable(db: sqlite3.Connection, queue: int) -> list[tuple[int, int]]:
    """The ids and lengths of the messages coalesce merges (see there), oldest first."""
    rows = db.execute(
        "SELECT id, length(text), channel FROM message WHERE queue = ? AND merged_into IS NULL AND claimed = 0"
        " ORDER BY id LIMIT ?",
        (queue, -1 if queue == ALERTS else MERGE_MAX),
    ).fetchall()
    if queue == ALERTS:
        return [(int(row[0]), int(row[1])) for row in rows if row[2] is None]
    return [(int(row[0]), int(row[1])) for row in itertools.takewhile(lambda row: row[2] is None, rows)]


def merge_pair(db: sqlite3.Connection, first: int, second: int, limit: int) -> None:
    """Appends message SECOND to FIRST (a blank line apart, within LIMIT characters)."""
    (text1, parts1), (text2, parts2) = (
        db.execute("SELECT text, parts FROM message WHERE id = ?", (first,)).fetchone(),
        db.execute("SELECT text, parts FROM message WHERE id = ?", (second,)).fetchone(),
    )
    joined = text1 + "\n\n" + text2
    if len(joined) > limit:
        joined = cut_to(text1, limit // 2) + "\n\n" + cut_to(text2, limit - min(len(text1), limit // 2) - 2)
        joined = cut_to(joined, limit)
    db.execute("UPDATE message SET text = ?, parts = ? WHERE id = ?", (joined, parts1 + parts2, first))
    # Two parts about different alerts (not both notices): the message is about none of them alone, and
    # must not travel as one's resolution or be skipped as a notice: a firing alert of its own.
    query = "SELECT host, monitor, condition, episode, state FROM message WHERE id = ?"
    about1, about2 = db.execute(query, (first,)).fetchone(), db.execute(query, (second,)).fetchone()
    if about1 != about2 and not about1[4] == about2[4] == NOTICE:
        merged = (about1[0], "hostguard", "merged", int(time.time()), FIRING, first)
        db.execute(
            "UPDATE message SET host = ?, monitor = ?, condition = ?, episode = ?, state = ? WHERE id = ?", merged
        )
    db.execute("UPDATE message SET merged_into = ?, text = '' WHERE id = ? OR merged_into = ?", (first, second, second))
