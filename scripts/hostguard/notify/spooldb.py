"""The spool's database file: opened (WAL, a busy timeout), made when new, its
schema version in `PRAGMA user_version`; each message keeps its identity (message.Identity:
host, monitor, condition, episode, state) for its format; a file that is not this version's
spool raises Foreign (spool.py moves it aside). One write step is one
`BEGIN IMMEDIATE` transaction.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time

from .. import log
from ..atomicfile import lock_within

SCHEMA_VERSION = 2
# The spool's reserve: a file a full disk gives back, so that the messages of
# that moment are still kept (made again by the next delivery run).
RESERVE_BYTES = 65536
RESERVE_NAME = ".reserve"

_SCHEMA = """
CREATE TABLE message (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue INTEGER NOT NULL,
  text TEXT NOT NULL,
  channel TEXT,
  parts INTEGER NOT NULL DEFAULT 1,
  created REAL NOT NULL,
  claimed INTEGER NOT NULL DEFAULT 0,
  host TEXT NOT NULL DEFAULT '',
  monitor TEXT NOT NULL DEFAULT '',
  condition TEXT NOT NULL DEFAULT '',
  episode INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL DEFAULT 'notice',
  merged_into INTEGER
);
CREATE INDEX message_waiting ON message(queue, id) WHERE merged_into IS NULL;
CREATE INDEX message_parts ON message(merged_into) WHERE merged_into IS NOT NULL;
CREATE TABLE dead (
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
CREATE TABLE delivered (id INTEGER PRIMARY KEY, at REAL NOT NULL);
CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE refusal (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  identity TEXT NOT NULL,
  since INTEGER NOT NULL,
  next_probe INTEGER NOT NULL,
  interval INTEGER NOT NULL,
  why TEXT NOT NULL
);
PRAGMA user_version = 2
"""


class Foreign(Exception):
    """A database file that is not this version's spool; INODE: that file's (set aside only while it is there)."""

    def __init__(self, why: str, inode: int) -> None:
        super().__init__(why)
        self.inode = inode


class Transaction:
    """One write step, committed, or rolled back on any exception: a failed
    statement (disk full, busy past the timeout) never leaves the connection
    inside a transaction for its next step."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:
            self.db.execute("ROLLBACK")


def open_db(path: str, busy: float) -> sqlite3.Connection:
    """The spool database at PATH, made when new; Foreign when it is not this version's spool."""
    # Made 0600 before SQLite opens it: its -wal and -shm files take its mode.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    inode = os.fstat(fd).st_ino
    os.close(fd)
    db = sqlite3.connect(path, timeout=busy, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            with Transaction(db):
                make_schema(db)
    except sqlite3.OperationalError:  # busy, locked, disk full: not the file's fault
        db.close()
        raise
    except (sqlite3.DatabaseError, Foreign) as error:  # "file is not a database", "malformed", another schema
        db.close()
        raise Foreign(str(error), inode) from None
    except BaseException:
        db.close()
        raise
    return db


def make_schema(db: sqlite3.Connection) -> None:
    """Makes the tables in an empty database (inside the caller's transaction: a second process
    opening the new file at the same time waits, then finds them); Foreign for any other."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version != 0:
        raise Foreign(f"schema version {version}, not {SCHEMA_VERSION}", 0)
    if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
        raise Foreign("tables of another program", 0)
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)


def move_aside(path: str, found: int, lock_name: str, busy: float) -> str | None:
    """Moves the database at PATH (and its journal files) aside, under LOCK_NAME and only while the file
    at PATH is still the one found unusable (inode FOUND): moved once, never a new spool; the aside name
    is never reused. Its name now, or None when another opener moved it already."""
    fd = os.open(
        os.path.join(os.path.dirname(path), lock_name), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    try:
        if not lock_within(fd, busy, 0.05):
            return None  # another opener is moving it: never move it without the lock
        try:
            if os.stat(path).st_ino != found:
                return None
        except FileNotFoundError:
            return None
        aside = f"{path}.bad-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns()}"
        os.link(path, aside)
        os.unlink(path)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.rename(path + suffix, aside + suffix)
        return aside
    finally:
        os.close(fd)


def use_reserve(directory: str) -> bool:
    """Gives back the reserve's space; True when there was one."""
    try:
        os.unlink(os.path.join(directory, RESERVE_NAME))
    except OSError:
        return False
    log.error(f"the disk of {directory} is full: used the spool's reserve to keep this message; free some space")
    return True


def make_reserve(directory: str) -> None:
    """Makes the reserve when it is missing (quietly not when the disk is full)."""
    reserve = os.path.join(directory, RESERVE_NAME)
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
        with contextlib.suppress(OSError):
            os.unlink(temp)
