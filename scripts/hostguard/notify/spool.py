"""The spool: every message not yet delivered, in one SQLite database (spool.db in the root-only spool
dir, spooldb.py). Each step is one short transaction, so a process killed at any line leaves it done or
not done (`synchronous=NORMAL`: a power loss may lose the last transactions).

Two queues, posted in this order, each oldest first: 0 the monitors' alerts, 1 the ban tool's messages,
each bounded (spoolbound.py). Dead letters are bounded the same way. `outcome(id)` tells a writer what
became of its message (merged parts and delivered ids are kept for it). A database SQLite cannot read,
or of another schema version, is moved aside and a new one made, whose first alert says so.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from collections.abc import Callable
from typing import NamedTuple, TypeVar

from .. import log, paths
from ..atomicfile import lock_within, open_lock
from .message import FIRING, NOTICE, Identity, Message
from .spoolbound import ALERTS, BURST, BYTES_MAX, EVENTS, MERGE_CHARS, MERGE_MAX, bound, coalesce, waiting
from .spooldb import Foreign, Transaction, make_reserve, move_aside, open_db, use_reserve

T = TypeVar("T")

DB_NAME = "spool.db"
# The delivery lock: one delivery run at a time (delivery.py).
LOCK_NAME = ".lock"
# Held while an unusable database is moved aside (one mover, never a new spool).
ASIDE_LOCK_NAME = ".aside.lock"
# A writer waits this long for another's transaction (they take milliseconds).
BUSY_SECONDS = 10.0
# Delivered ids are kept this long for `outcome` (hostguard-notify text).
DELIVERED_KEEP = 86400.0
# State key: the pid of a detached flush the ban action started that has not yet taken the lock.
STARTING = "flush_starting"
__all__ = ["ALERTS", "EVENTS", "MERGE_CHARS", "MERGE_MAX", "Spool", "SpoolFull"]


class DeadLetter(NamedTuple):
    id: int
    died: float
    reason: str


class Refusal(NamedTuple):
    """The chat service refused the webhook file IDENTITY since SINCE; probed again at NEXT_PROBE."""

    identity: str
    since: int
    next_probe: int
    interval: int
    why: str


class SpoolFull(Exception):
    """The spool could not be written, not even with its reserve (disk full)."""


def spool_dir() -> str:
    return paths.under(paths.SPOOL_PATH)


def name_of(message_id: int) -> str:
    return f"msg-{message_id}"


def _is_full(error: Exception) -> bool:
    text = str(error).lower()
    return isinstance(error, OSError) or "full" in text or "disk i/o" in text or "unable to open" in text


class Spool:
    """The spool database of this host (one connection per process)."""

    def __init__(
        self, spool_max: int, directory: str | None = None, busy: float = BUSY_SECONDS, long_lived: bool = False
    ) -> None:
        """LONG_LIVED: the connection outlives a run (the ban action's, in fail2ban's process): it is
        reopened when the database file was replaced. Closing a WAL connection checkpoints (an fsync);
        a connection kept open spares every ban that cost."""
        self.directory = directory if directory is not None else spool_dir()
        self.spool_max = spool_max
        self.busy = busy
        self._db: sqlite3.Connection | None = None
        self._inode: int | None = 0 if long_lived else None
        self._opened = 0  # the inode of the file the connection was opened on
        self._probe: int | None = None  # the delivery lock's descriptor of lock_free

    # ---- connection ---------------------------------------------------------

    def db(self) -> sqlite3.Connection:
        if self._db is not None and self._inode is not None:
            # A long-lived connection (the ban action's) follows a database another process set aside.
            try:
                replaced = os.stat(os.path.join(self.directory, DB_NAME)).st_ino != self._inode
            except OSError:
                replaced = True
            if replaced:
                self.close()
        if self._db is None:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            path = os.path.join(self.directory, DB_NAME)
            try:
                self._db = open_db(path, self.busy)
            except Foreign as error:
                self._set_aside(str(error), error.inode)
                self._db = open_db(path, self.busy)
            self._opened = os.stat(path).st_ino
            if self._inode is not None:
                self._inode = self._opened
        return self._db

    def _set_aside(self, why: str, found: int) -> None:
        """Moves the unusable database aside (spooldb.move_aside) and makes a new one whose first alert says so."""
        self.close()
        path = os.path.join(self.directory, DB_NAME)
        aside = move_aside(path, found, ASIDE_LOCK_NAME, self.busy)
        if aside is None:
            return
        text = (
            f"[Server Alert] \nhostguard: the spool database {path} could not be used ({why}):"
            f" it was moved aside to {aside} (its messages were not sent) and a new spool made"
        )
        log.error(text.split("\n", 1)[1])
        self._db = open_db(path, self.busy)
        # Firing: the lost messages need a person, PagerDuty included.
        about = Identity("", "hostguard", "spool-set-aside", int(time.time()), FIRING)
        with self._transaction() as db:
            self._insert(db, text, None, ALERTS, about)
        self.close()

    def try_lock(self, wait: float) -> int | None:
        """The descriptor holding the delivery lock, waiting at most WAIT seconds; None when another run holds it."""
        self.db()  # makes the spool directory
        fd = open_lock(os.path.join(self.directory, LOCK_NAME))
        # A run holds it for seconds, not milliseconds.
        if lock_within(fd, wait, 0.05):
            return fd
        os.close(fd)
        return None

    def lock_free(self) -> bool:
        """Whether no delivery run holds the delivery lock: tried without waiting and let go at once, on a
        descriptor kept open (the ban action asks at every ban)."""
        if self._probe is None:
            self.db()  # makes the spool directory
            self._probe = open_lock(os.path.join(self.directory, LOCK_NAME))
        try:
            fcntl.flock(self._probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(self._probe, fcntl.LOCK_UN)
        return True

    def close(self) -> None:
        if self._probe is not None:
            os.close(self._probe)
            self._probe = None
        if self._db is not None:
            self._db.close()
            self._db = None

    def _transaction(self) -> Transaction:
        return Transaction(self.db())

    # ---- writers ------------------------------------------------------------

    def enqueue(
        self, text: str, channel: str | None = None, queue: int = ALERTS, identity: Identity | None = None
    ) -> int:
        """Spools one message (IDENTITY: what it is about, none: a notice) and bounds its queue, in one
        transaction; its id.

        Raises SpoolFull when the spool cannot be written even after giving
        back the reserve (the caller decides: an alert is delivered directly,
        a ban-tool message is reported lost).
        """
        about = identity or Identity("", "", "", 0, NOTICE)
        return self._kept(lambda: self._enqueue(text, channel, queue, about))

    def _kept(self, step: Callable[[], T]) -> T:
        """STEP, done again after giving back the reserve when the disk is full, or after moving aside a
        database found corrupt by it; else SpoolFull (its cause in the text)."""
        try:
            return step()
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):
                if not _is_full(error) or not self.use_reserve():
                    raise SpoolFull(str(error)) from None
            else:  # "database disk image is malformed": not the disk's room, the file
                try:
                    self._set_aside(str(error), self._opened)
                except (sqlite3.Error, OSError) as failed:
                    raise SpoolFull(f"{error}; cannot set it aside: {failed}") from None
        except OSError as error:
            if not self.use_reserve():
                raise SpoolFull(str(error)) from None
        try:
            return step()
        except (sqlite3.Error, OSError) as error:
            raise SpoolFull(str(error)) from None

    def _enqueue(self, text: str, channel: str | None, queue: int, identity: Identity) -> int:
        with self._transaction() as db:
            message_id = self._insert(db, text, channel, queue, identity)
            self._bound(db, queue)
        return message_id

    def _bound(self, db: sqlite3.Connection, queue: int) -> None:
        dropped = bound(db, queue, self.spool_max)
        if dropped:
            total = self._state_int(db, "dropped") + dropped
            self._set_state(db, "dropped", str(total))
            log.warn(
                f"ban-tool messages over the spool's bound (NOTIFY_SPOOL_MAX={self.spool_max}, {BYTES_MAX} bytes):"
                f" dropped the {dropped} oldest; {total} dropped since the last delivery"
            )

    @staticmethod
    def _insert(db: sqlite3.Connection, text: str, channel: str | None, queue: int, identity: Identity) -> int:
        cursor = db.execute(
            "INSERT INTO message(queue, text, channel, created, host, monitor, condition, episode, state)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (queue, text, channel or None, time.time(), *identity),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    # ---- the delivery run (it holds the delivery lock) -----------------------

    def unclaim_all(self) -> None:
        """Puts back what a killed run had claimed (only one run delivers at a time)."""
        with self._transaction() as db:
            db.execute("UPDATE message SET claimed = 0 WHERE claimed != 0")

    def claim_next(self, merge_chars: int = MERGE_CHARS) -> Message | None:
        """Claims the next message to post: alerts first, each queue oldest first.

        When it is a ban-tool message and a burst waits (BURST or more), the
        oldest (up to MERGE_MAX, within MERGE_CHARS, or the format's shorter
        MERGE_CHARS) become one message first.
        """
        query = (
            "SELECT id, queue, text, channel, parts, created, host, monitor, condition, episode, state"
            " FROM message WHERE merged_into IS NULL AND claimed = 0 ORDER BY queue, id LIMIT 1"
        )
        with self._transaction() as db:
            row = db.execute(query).fetchone()
            if row is None:
                return None
            if row[1] == EVENTS and waiting(db, EVENTS)[0] >= BURST:
                if merges := coalesce(db, EVENTS, MERGE_MAX - 1, merge_chars):
                    log.info(f"a burst of ban-tool messages: the oldest {merges + 1} go as one")
                row = db.execute(query).fetchone()
            db.execute("UPDATE message SET claimed = 1 WHERE id = ?", (row[0],))
        identity = Identity(*row[6:])
        return Message(row[2], row[3], identity, created=row[5], id=row[0], queue=row[1], parts=row[4])

    def delivered(self, message_id: int, dropped_announced: int = 0) -> None:
        """Removes a delivered message (and its parts), their ids kept a day; the announced drops counted off."""
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO delivered(id, at) SELECT id, ? FROM message WHERE id = ? OR merged_into = ?",
                (now, message_id, message_id),
            )
            db.execute("DELETE FROM delivered WHERE at < ?", (now - DELIVERED_KEEP,))
            db.execute("DELETE FROM message WHERE id = ? OR merged_into = ?", (message_id, message_id))
            if dropped_announced:
                left = max(0, self._state_int(db, "dropped") - dropped_announced)
                self._set_state(db, "dropped", str(left))
            self._set_state(db, "last_delivery", f"{time.strftime('%Y-%m-%d %H:%M:%S')} {name_of(message_id)}")

    def delivered_piece(self, message_id: int, rest: str, dropped_announced: int = 0) -> None:
        """Keeps only REST of a merged message whose first piece was delivered (it stays claimed)."""
        with self._transaction() as db:
            db.execute("UPDATE message SET text = ? WHERE id = ?", (rest, message_id))
            if dropped_announced:
                left = max(0, self._state_int(db, "dropped") - dropped_announced)
                self._set_state(db, "dropped", str(left))
            self._set_state(db, "last_delivery", f"{time.strftime('%Y-%m-%d %H:%M:%S')} {name_of(message_id)}")

    def release(self, message_id: int) -> None:
        """Puts a claimed message back (a transient failure); its queue bounded again."""
        with self._transaction() as db:
            row = db.execute("SELECT queue FROM message WHERE id = ?", (message_id,)).fetchone()
            db.execute("UPDATE message SET claimed = 0 WHERE id = ?", (message_id,))
            if row is not None:
                self._bound(db, int(row[0]))

    def drop_channel(self, message_id: int) -> None:
        """Keeps a message without its channel override (it was refused as channel_not_found)."""
        with self._transaction() as db:
            db.execute("UPDATE message SET channel = NULL WHERE id = ?", (message_id,))

    def bury(self, message_id: int, reason: str) -> None:
        """Moves a message (and its parts) to the dead letters with REASON; the oldest go past both bounds."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO dead(id, queue, text, channel, parts, created, died, reason, merged_into)"
                " SELECT id, queue, text, channel, parts, created, ?, ?, merged_into FROM message"
                " WHERE id = ? OR merged_into = ?",
                (time.time(), reason, message_id, message_id),
            )
            db.execute("DELETE FROM message WHERE id = ? OR merged_into = ?", (message_id, message_id))
            while True:
                count, size = db.execute(
                    "SELECT count(*), coalesce(sum(length(CAST(text AS BLOB))), 0) FROM dead WHERE merged_into IS NULL"
                ).fetchone()
                if count <= 1 or (count <= self.spool_max and size <= BYTES_MAX):
                    break
                old = db.execute("SELECT min(id) FROM dead WHERE merged_into IS NULL").fetchone()[0]
                db.execute("DELETE FROM dead WHERE id = ? OR merged_into = ?", (old, old))

    # ---- readers ------------------------------------------------------------

    def pending(self) -> int:
        """Messages waiting or claimed (not parts)."""
        row = self.db().execute("SELECT count(*) FROM message WHERE merged_into IS NULL").fetchone()
        return int(row[0])

    def oldest_created(self) -> float | None:
        row = self.db().execute("SELECT min(created) FROM message").fetchone()
        return None if row[0] is None else float(row[0])

    def outcome(self, message_id: int) -> str:
        """What became of a message spooled by this process: pending, delivered, dead or unknown
        (gone without a trace: a dead letter the bound let go, or delivered over a day ago)."""
        db = self.db()
        # A part's message is never itself a part (merge_pair moves the parts along), and both leave together.
        if db.execute("SELECT 1 FROM message WHERE id = ?", (message_id,)).fetchone() is not None:
            return "pending"
        if db.execute("SELECT 1 FROM dead WHERE id = ?", (message_id,)).fetchone() is not None:
            return "dead"
        if db.execute("SELECT 1 FROM delivered WHERE id = ?", (message_id,)).fetchone() is not None:
            return "delivered"
        return "unknown"

    def dead_letters(self) -> list[DeadLetter]:
        rows = self.db().execute("SELECT id, died, reason FROM dead WHERE merged_into IS NULL ORDER BY id").fetchall()
        return [DeadLetter(int(r[0]), float(r[1]), str(r[2])) for r in rows]

    # ---- small state (delivery bookkeeping) -----------------------------------

    def _state_int(self, db: sqlite3.Connection, key: str) -> int:
        row = db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row is not None and str(row[0]).isdigit() else 0

    def _set_state(self, db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO state(key, value) VALUES (?, ?)", (key, value))

    def get(self, key: str) -> str | None:
        row = self.db().execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, value: str | None) -> None:
        """Sets (or with None removes) one state value."""
        with self._transaction() as db:
            if value is None:
                db.execute("DELETE FROM state WHERE key = ?", (key,))
            else:
                self._set_state(db, key, value)

    def dropped(self) -> int:
        return self._state_int(self.db(), "dropped")

    def refusal(self) -> Refusal | None:
        row = self.db().execute("SELECT identity, since, next_probe, interval, why FROM refusal").fetchone()
        return None if row is None else Refusal(str(row[0]), int(row[1]), int(row[2]), int(row[3]), str(row[4]))

    def set_refusal(self, refusal: Refusal | None) -> None:
        """Records (or with None clears) the chat service's refusal of the webhook."""
        with self._transaction() as db:
            db.execute("DELETE FROM refusal")
            if refusal is not None:
                db.execute("INSERT INTO refusal VALUES (1, ?, ?, ?, ?, ?)", refusal)

    # ---- the reserve (spooldb.py) -------------------------------------------

    def use_reserve(self) -> bool:
        return use_reserve(self.directory)

    def make_reserve(self) -> None:
        make_reserve(self.directory)
