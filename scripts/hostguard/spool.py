"""The spool: every message not yet delivered, in one SQLite database
(spool.db in the root-only spool dir; WAL, a busy timeout, one short
`BEGIN IMMEDIATE` transaction per step). No actor renames or replaces
another's data, and a process killed at any line leaves a step done or not
done (`synchronous=NORMAL`: a power loss may lose the last transactions).

Two queues, posted in this order, each oldest first: 0 the monitors' alerts
(and `text`), 1 the ban tool's messages. Over NOTIFY_SPOOL_MAX waiting in a
queue, ban-tool messages are dropped (counted; the next delivered message
says how many) and alerts merged, never dropped (a full merged message
starts a new one; when no two fit the newer part is cut with a marker, so
the bound holds whatever the sizes). Merged parts stay as rows pointing at
their message, so `outcome(id)` can tell a writer what became of its part.

The hint `.pending` spares a quiet monitor run SQLite: writers create it
before and after their transaction; only the delivery run removes it, when
it finds nothing to claim, and counts again afterwards (putting it back if a
writer got in). A writer killed between its commit and its second touch
while the hint is settled leaves its message without one: the next message,
any `flush` or the hourly full look of paths.spool_may_hold_messages sends it.
"""

import os
import time

from . import paths
from .message import CUT_MARKER, TEXT_MAX

# sqlite3 is imported where a connection is made, never on a quiet run.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Callable, TypeVar

    T = TypeVar("T")

ALERTS = 0
EVENTS = 1
# A burst: at least this many ban-tool messages waiting go merged, at most
# MERGE_MAX to a message (the chat service takes about one message a second).
BURST = 10
MERGE_MAX = 50
# A merged message stays this far below the chat service's text limit.
MERGE_CHARS = 30000
# The spool's reserve: a file a full disk gives back, so that the messages of
# that moment are still kept (made again by the next delivery run).
RESERVE_BYTES = 65536
RESERVE_NAME = ".reserve"
DB_NAME = paths.SPOOL_DB_NAME
# The delivery lock: one delivery run at a time (delivery.py).
LOCK_NAME = ".lock"
HINT_NAME = paths.SPOOL_HINT_NAME
# A writer waits this long for another's transaction (they take milliseconds).
BUSY_SECONDS = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS message (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue INTEGER NOT NULL,
  text TEXT NOT NULL,
  channel TEXT,
  parts INTEGER NOT NULL DEFAULT 1,
  created REAL NOT NULL,
  claimed INTEGER NOT NULL DEFAULT 0,
  merged_into INTEGER
);
CREATE INDEX IF NOT EXISTS message_waiting ON message(queue, id) WHERE merged_into IS NULL;
CREATE INDEX IF NOT EXISTS message_parts ON message(merged_into) WHERE merged_into IS NOT NULL;
CREATE TABLE IF NOT EXISTS dead (
  id INTEGER PRIMARY KEY,
  queue INTEGER NOT NULL,
  text TEXT NOT NULL,
  channel TEXT,
  parts INTEGER NOT NULL,
  created REAL NOT NULL,
  died REAL NOT NULL,
  reason TEXT NOT NULL,
  merged_into INTEGER
);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Message:
    """One waiting (or claimed) message (not a NamedTuple: a ban imports no typing)."""

    __slots__ = ("channel", "created", "id", "parts", "queue", "text")

    def __init__(self, id: int, queue: int, text: str, channel: "str | None", parts: int, created: float) -> None:
        self.id = id
        self.queue = queue
        self.text = text
        self.channel = channel
        self.parts = parts
        self.created = created


class DeadLetter:
    __slots__ = ("died", "id", "reason")

    def __init__(self, id: int, died: float, reason: str) -> None:
        self.id = id
        self.died = died
        self.reason = reason


class _Transaction:
    """One write step, committed, or rolled back on any exception: a failed
    statement (disk full, busy past the timeout) never leaves the connection
    inside a transaction for its next step."""

    def __init__(self, db: "sqlite3.Connection") -> None:
        self.db = db

    def __enter__(self) -> "sqlite3.Connection":
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:
            self.db.execute("ROLLBACK")


class SpoolFull(Exception):
    """The spool could not be written, not even with its reserve (disk full)."""


def lock_within(fd: int, wait: float, step: float) -> bool:
    """An exclusive flock on FD, tried every STEP seconds for at most WAIT (flock has no timed wait)."""
    import fcntl

    give_up = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= give_up:
                return False
        time.sleep(step)


def spool_dir() -> str:
    return paths.under(paths.SPOOL_PATH)


def undelivered(path: str) -> int:
    """Messages waiting in the spool database PATH, each merged part counted, or in the ban tool's
    intake PATH (its whole records), or 1 for another message file (read-only; install's uninstall)."""
    import sqlite3

    if not path.endswith(".db"):
        with open(path, "rb") as handle:
            data = handle.read(64 << 20)
        return data.count(b"\t.\n") if path.endswith("/" + paths.INTAKE_NAME) else 1

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = db.execute("SELECT coalesce(sum(parts), 0) FROM message WHERE merged_into IS NULL").fetchone()
    finally:
        db.close()
    return int(row[0])


def name_of(message_id: int) -> str:
    return f"msg-{message_id}"


def _cut_to(text: str, room: int) -> str:
    """TEXT in at most ROOM characters, the cut marked."""
    if len(text) <= room:
        return text
    return text[: max(0, room - len(CUT_MARKER))] + CUT_MARKER[:room]


def _is_full(error: Exception) -> bool:
    text = str(error).lower()
    return isinstance(error, OSError) or "full" in text or "disk i/o" in text or "unable to open" in text


class Spool:
    """The spool database of this host (one connection per process)."""

    def __init__(self, spool_max: int, directory: "str | None" = None) -> None:
        self.directory = directory if directory is not None else spool_dir()
        self.spool_max = spool_max
        self._db: "sqlite3.Connection | None" = None  # noqa: UP037 - mypy for 3.9 needs the quotes

    # ---- connection ---------------------------------------------------------

    def db(self) -> "sqlite3.Connection":
        import sqlite3

        if self._db is None:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            path = os.path.join(self.directory, DB_NAME)
            # Made 0600 before SQLite opens it: its -wal and -shm files take its mode.
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
            db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                if db.execute("SELECT count(*) FROM sqlite_master WHERE name='state'").fetchone()[0] == 0:
                    db.executescript("BEGIN IMMEDIATE;" + _SCHEMA + "COMMIT;")
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def try_lock(self, wait: float) -> "int | None":
        """The descriptor holding the delivery lock, waiting at most WAIT seconds; None when another run holds it."""
        self.db()  # makes the spool directory
        fd = os.open(
            os.path.join(self.directory, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        # A run holds it for seconds, not milliseconds.
        if lock_within(fd, wait, 0.05):
            return fd
        os.close(fd)
        return None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db())

    # ---- writers ------------------------------------------------------------

    def enqueue(self, text: str, channel: "str | None" = None, queue: int = ALERTS) -> int:
        """Spools one message and bounds its queue, in one transaction; its id.

        Raises SpoolFull when the spool cannot be written even after giving
        back the reserve (the caller decides: an alert is delivered directly,
        a ban-tool message is reported lost).
        """
        return self._kept(lambda: self._enqueue(text, channel, queue))

    def enqueue_batch(
        self, messages: "list[tuple[str, str | None]]", dead: "list[tuple[str, str]]", queue: int, key: str, value: str
    ) -> None:
        """Spools MESSAGES (text, channel) of QUEUE, records DEAD ones (text, reason), bounds the queue
        and sets state KEY to VALUE (what the caller took them from), in one transaction; else SpoolFull.

        Never gives back the reserve: what the caller took them from keeps
        them meanwhile, and the reserve is for a message nothing else keeps.
        """
        import sqlite3

        try:
            self._enqueue_batch(messages, dead, queue, key, value)
        except (sqlite3.Error, OSError) as error:
            raise SpoolFull(str(error)) from None

    def _kept(self, step: "Callable[[], T]") -> "T":
        """STEP, done again after giving back the reserve when the disk is full; else SpoolFull."""
        import sqlite3

        try:
            return step()
        except (sqlite3.Error, OSError) as error:
            if not _is_full(error) or not self.use_reserve():
                raise SpoolFull(str(error)) from None
        try:
            return step()
        except (sqlite3.Error, OSError) as error:
            raise SpoolFull(str(error)) from None

    def touch_hint(self) -> None:
        """Says a message may wait (a writer, before and after its transaction)."""
        fd = os.open(
            os.path.join(self.directory, HINT_NAME), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        os.close(fd)

    def _settle_hint(self, db: "sqlite3.Connection") -> bool:
        """The delivery run found nothing to claim: removes the hint; True when a writer got in meanwhile."""
        try:  # noqa: SIM105 - contextlib is one import more on every quiet run
            os.unlink(os.path.join(self.directory, HINT_NAME))
        except FileNotFoundError:
            pass
        row = db.execute("SELECT count(*) FROM message WHERE merged_into IS NULL AND claimed = 0").fetchone()
        if int(row[0]) == 0:
            return False
        self.touch_hint()
        return True

    def _enqueue(self, text: str, channel: "str | None", queue: int) -> int:
        transaction = self._transaction()  # opens the database, making the spool directory first
        self.touch_hint()
        with transaction as db:
            message_id = self._insert(db, text, channel, queue)
            self._bound(db, queue)
        self.touch_hint()
        return message_id

    def _enqueue_batch(
        self, messages: "list[tuple[str, str | None]]", dead: "list[tuple[str, str]]", queue: int, key: str, value: str
    ) -> None:
        transaction = self._transaction()
        self.touch_hint()
        with transaction as db:
            for text, channel in messages:
                self._insert(db, text, channel, queue)
            for text, reason in dead:
                self._insert_dead(db, self._insert(db, text, None, queue), reason)
            self._bound(db, queue)
            self._set_state(db, key, value)
        self.touch_hint()

    @staticmethod
    def _insert(db: "sqlite3.Connection", text: str, channel: "str | None", queue: int) -> int:
        cursor = db.execute(
            "INSERT INTO message(queue, text, channel, created) VALUES (?, ?, ?, ?)",
            (queue, text, channel or None, time.time()),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    @staticmethod
    def _insert_dead(db: "sqlite3.Connection", message_id: int, reason: str) -> None:
        """Moves the just inserted MESSAGE_ID, never waiting in a queue, to the dead letters."""
        db.execute(
            "INSERT OR REPLACE INTO dead(id, queue, text, channel, parts, created, died, reason, merged_into)"
            " SELECT id, queue, text, channel, parts, created, ?, ?, NULL FROM message WHERE id = ?",
            (time.time(), reason, message_id),
        )
        db.execute("DELETE FROM message WHERE id = ?", (message_id,))

    def _waiting(self, db: "sqlite3.Connection", queue: int) -> int:
        row = db.execute(
            "SELECT count(*) FROM message WHERE queue = ? AND merged_into IS NULL AND claimed = 0", (queue,)
        ).fetchone()
        return int(row[0])

    def _bound(self, db: "sqlite3.Connection", queue: int) -> None:
        over = self._waiting(db, queue) - self.spool_max
        if over <= 0:
            return
        if queue == EVENTS:
            self._drop_oldest(db, over)
        else:
            self._merge_oldest(db, over)

    def _drop_oldest(self, db: "sqlite3.Connection", count: int) -> None:
        rows = db.execute(
            "SELECT id, parts FROM message WHERE queue = ? AND merged_into IS NULL AND claimed = 0 ORDER BY id LIMIT ?",
            (EVENTS, count),
        ).fetchall()
        ids = [row[0] for row in rows]
        dropped = sum(row[1] for row in rows)
        db.executemany("DELETE FROM message WHERE id = ? OR merged_into = ?", [(i, i) for i in ids])
        total = self._state_int(db, "dropped") + dropped
        self._set_state(db, "dropped", str(total))
        from . import log

        log.warn(
            f"ban-tool messages over NOTIFY_SPOOL_MAX={self.spool_max}: dropped the {dropped} oldest; "
            f"{total} dropped since the last delivery"
        )

    def _merge_oldest(self, db: "sqlite3.Connection", count: int) -> None:
        """Merges alerts, oldest first, until COUNT fewer wait (never drops one)."""
        rows = db.execute(
            "SELECT id, length(text) FROM message WHERE queue = ? AND merged_into IS NULL AND claimed = 0"
            " AND channel IS NULL ORDER BY id",
            (ALERTS,),
        ).fetchall()
        merged = 0
        target = 0
        # Pairs that fit below MERGE_CHARS, oldest first; a full message starts a new one.
        while merged < count and target + 1 < len(rows):
            (first, first_len), (second, second_len) = rows[target], rows[target + 1]
            if first_len + 2 + second_len <= MERGE_CHARS:
                self._merge_pair(db, first, second, TEXT_MAX)
                rows[target] = (first, first_len + 2 + second_len)
                del rows[target + 1]
                merged += 1
            else:
                target += 1
        # None fit: the two oldest go as one, the newer cut so that it fits the text limit.
        while merged < count and len(rows) >= 2:
            (first, first_len), (second, _) = rows[0], rows[1]
            self._merge_pair(db, first, second, TEXT_MAX)
            rows[0] = (first, TEXT_MAX)
            del rows[1]
            merged += 1
        if merged:
            from . import log

            log.warn(
                f"spool over NOTIFY_SPOOL_MAX={self.spool_max}: merged {merged + 1} of the oldest alerts"
                " into fewer messages (alerts are never dropped)"
            )

    def _merge_pair(self, db: "sqlite3.Connection", first: int, second: int, limit: int) -> None:
        """Appends message SECOND to FIRST (a blank line apart, within LIMIT characters)."""
        (text1, parts1), (text2, parts2) = (
            db.execute("SELECT text, parts FROM message WHERE id = ?", (first,)).fetchone(),
            db.execute("SELECT text, parts FROM message WHERE id = ?", (second,)).fetchone(),
        )
        joined = text1 + "\n\n" + text2
        if len(joined) > limit:
            joined = text1[: limit // 2] + "\n\n" + _cut_to(text2, limit - min(len(text1), limit // 2) - 2)
            joined = _cut_to(joined, limit)
        db.execute("UPDATE message SET text = ?, parts = ? WHERE id = ?", (joined, parts1 + parts2, first))
        db.execute(
            "UPDATE message SET merged_into = ?, text = '' WHERE id = ? OR merged_into = ?", (first, second, second)
        )

    # ---- the delivery run (it holds the delivery lock) -----------------------

    def unclaim_all(self) -> None:
        """Puts back what a killed run had claimed (only one run delivers at a time)."""
        with self._transaction() as db:
            db.execute("UPDATE message SET claimed = 0 WHERE claimed != 0")

    def claim_next(self) -> "Message | None":
        """Claims the next message to post: alerts first, each queue oldest first.

        When it is a ban-tool message and a burst waits (BURST or more), the
        oldest (up to MERGE_MAX, within MERGE_CHARS) become one message first.
        """
        with self._transaction() as db:
            row = db.execute(
                "SELECT id, queue, text, channel, parts, created FROM message"
                " WHERE merged_into IS NULL AND claimed = 0 ORDER BY queue, id LIMIT 1"
            ).fetchone()
            if row is not None:
                if row[1] == EVENTS and self._waiting(db, EVENTS) >= BURST:
                    self._merge_burst(db)
                    row = db.execute(
                        "SELECT id, queue, text, channel, parts, created FROM message"
                        " WHERE merged_into IS NULL AND claimed = 0 ORDER BY queue, id LIMIT 1"
                    ).fetchone()
                db.execute("UPDATE message SET claimed = 1 WHERE id = ?", (row[0],))
        if row is None:
            return self.claim_next() if self._settle_hint(self.db()) else None
        return Message(*row)

    def _merge_burst(self, db: "sqlite3.Connection") -> None:
        rows = db.execute(
            "SELECT id, length(text), channel FROM message WHERE queue = ? AND merged_into IS NULL AND claimed = 0"
            " ORDER BY id LIMIT ?",
            (EVENTS, MERGE_MAX),
        ).fetchall()
        if not rows or rows[0][2] is not None:
            return
        first, length = rows[0][0], rows[0][1]
        merged = 1
        for other, other_len, channel in rows[1:]:
            if channel is not None or length + 2 + other_len > MERGE_CHARS:
                break
            self._merge_pair(db, first, other, MERGE_CHARS)
            length += 2 + other_len
            merged += 1
        if merged > 1:
            from . import log

            log.info(f"a burst of ban-tool messages: the oldest {merged} go as one")

    def delivered(self, message_id: int, dropped_announced: int = 0) -> None:
        """Removes a delivered message (and its parts); the announced drops are counted off."""
        with self._transaction() as db:
            db.execute("DELETE FROM message WHERE id = ? OR merged_into = ?", (message_id, message_id))
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
        """Moves a message (and its parts) to the dead letters with REASON; keeps at most spool_max."""
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO dead(id, queue, text, channel, parts, created, died, reason, merged_into)"
                " SELECT id, queue, text, channel, parts, created, ?, ?, merged_into FROM message"
                " WHERE id = ? OR merged_into = ?",
                (now, reason, message_id, message_id),
            )
            db.execute("DELETE FROM message WHERE id = ? OR merged_into = ?", (message_id, message_id))
            dead = int(db.execute("SELECT count(*) FROM dead WHERE merged_into IS NULL").fetchone()[0])
            if dead > self.spool_max:
                old = db.execute(
                    "SELECT id FROM dead WHERE merged_into IS NULL ORDER BY id LIMIT ?", (dead - self.spool_max,)
                ).fetchall()
                db.executemany("DELETE FROM dead WHERE id = ? OR merged_into = ?", [(r[0], r[0]) for r in old])

    def add_dead(self, text: str, channel: "str | None", queue: int, reason: str) -> int:
        """Records a dead letter directly (a message that can never be sent: an upgrade's bad spool file).

        Its id comes from the message table's sequence, as a buried message's
        does, and it never waits in a queue, so no bound merges or drops it.
        """
        with self._transaction() as db:
            message_id = self._insert(db, text, channel, queue)
            self._insert_dead(db, message_id, reason)
        return message_id

    # ---- readers ------------------------------------------------------------

    def pending(self) -> int:
        """Messages waiting or claimed (not parts)."""
        row = self.db().execute("SELECT count(*) FROM message WHERE merged_into IS NULL").fetchone()
        return int(row[0])

    def oldest_created(self) -> "float | None":
        row = self.db().execute("SELECT min(created) FROM message").fetchone()
        return None if row[0] is None else float(row[0])

    def outcome(self, message_id: int) -> str:
        """What became of a message spooled by this process: pending, delivered or dead."""
        db = self.db()
        current = message_id
        for _ in range(1000):
            row = db.execute("SELECT merged_into FROM message WHERE id = ?", (current,)).fetchone()
            if row is None:
                break
            if row[0] is None:
                return "pending"
            current = int(row[0])
        if db.execute("SELECT 1 FROM dead WHERE id = ?", (message_id,)).fetchone() is not None:
            return "dead"
        return "delivered"

    def dead_letters(self) -> list[DeadLetter]:
        rows = self.db().execute("SELECT id, died, reason FROM dead WHERE merged_into IS NULL ORDER BY id").fetchall()
        return [DeadLetter(int(r[0]), float(r[1]), str(r[2])) for r in rows]

    # ---- small state (delivery bookkeeping) -----------------------------------

    def _state_int(self, db: "sqlite3.Connection", key: str) -> int:
        row = db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row is not None and str(row[0]).isdigit() else 0

    def _set_state(self, db: "sqlite3.Connection", key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO state(key, value) VALUES (?, ?)", (key, value))

    def get(self, key: str) -> "str | None":
        row = self.db().execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, value: "str | None") -> None:
        """Sets (or with None removes) one state value; never fatal (disk full is logged by the caller)."""
        with self._transaction() as db:
            if value is None:
                db.execute("DELETE FROM state WHERE key = ?", (key,))
            else:
                self._set_state(db, key, value)

    def dropped(self) -> int:
        return self._state_int(self.db(), "dropped")

    # ---- the reserve -------------------------------------------------------

    def use_reserve(self) -> bool:
        """Gives back the reserve's space; True when there was one."""
        reserve = os.path.join(self.directory, RESERVE_NAME)
        try:
            os.unlink(reserve)
        except OSError:
            return False
        from . import log

        log.error(
            f"the disk of {self.directory} is full: used the spool's reserve to keep this message; free some space"
        )
        return True

    def make_reserve(self) -> None:
        """Makes the reserve when it is missing (quietly not when the disk is full)."""
        reserve = os.path.join(self.directory, RESERVE_NAME)
        if os.path.exists(reserve):
            return
        temp = reserve + ".tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, bytes(RESERVE_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, reserve)
        except OSError:
            try:  # noqa: SIM105 - contextlib is one import more on every quiet run
                os.unlink(temp)
            except OSError:
                pass
