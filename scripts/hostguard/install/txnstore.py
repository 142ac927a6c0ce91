"""The installer's one transaction store: every part's manifest and the running part's undo journal.

/var/lib/hostguard/install.db (root's, 0600, in the root-only state dir), in
SQLite as the spool: WAL, a busy timeout, one short `BEGIN IMMEDIATE`
transaction per step of the installer (a file placed, a step's records of
users' files, a record undone), never one per record, so install and
uninstall are linear in what they touch. Each step is written before the
change it describes (write-ahead): a run killed at any line leaves records
the next run completes.

`record` holds the manifests, oldest first by id (a record replaced in
place keeps its id, and so its position):
  dir PATH / mode PATH MODE UID:GID / file PATH HASHES / backup PATH COPY HASHES /
  pending PATH COPY / edited PATH COPY / log PATH / runtime PART /
  include REAL TOKEN / props REAL DOCUMENT / reload pending
The state directory's own chain (`dir` records of it) is the store's, part '';
`runtime PART` says the part's programs may have written their runtime files
(runtime_files.py). `journal` is the running part's undo list, newest undone
first (a dead run's is dropped: its copies went with the work directory, and
its manifest says what to undo); its kinds, each with fixed fields:
  put-back PATH COPY (PATH removed, then COPY put there, if any) /
  user-file REAL LABEL SAVED (a user's file written back as its controller) /
  remove-dir PATH / set-mode PATH MODE UID:GID / remove-store DB
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

DB_NAME = "install.db"
BUSY_SECONDS = 10.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS record (id INTEGER PRIMARY KEY AUTOINCREMENT, part TEXT NOT NULL,
  kind TEXT NOT NULL, path TEXT NOT NULL, a TEXT NOT NULL DEFAULT '', b TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS record_part ON record (part, id);
CREATE TABLE IF NOT EXISTS journal (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,
  path TEXT NOT NULL, a TEXT NOT NULL DEFAULT '', b TEXT NOT NULL DEFAULT '');
"""


# A journal entry as the installer writes it: kind, path, and the kind's two fields.
Undo = tuple[str, str, str, str]


class Rec(NamedTuple):
    id: int
    kind: str
    path: str
    a: str = ""
    b: str = ""


class Store:
    """One connection; `step` writes a step's record and journal changes in one transaction."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'journal'").fetchone():
            self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def records(self, part: str) -> list[Rec]:
        rows = self.db.execute("SELECT id, kind, path, a, b FROM record WHERE part = ? ORDER BY id", (part,))
        return [Rec(*row) for row in rows]

    def parts(self) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT DISTINCT part FROM record")}

    def journal(self) -> list[Rec]:
        return [Rec(*row) for row in self.db.execute("SELECT id, kind, path, a, b FROM journal ORDER BY id")]

    def step(
        self,
        part: str,
        add: Sequence[tuple[str, str, str, str]] = (),
        put: Sequence[Rec] = (),
        drop: Sequence[int] = (),
        undo: Sequence[tuple[str, str, str, str]] = (),
        clear_journal: bool = False,
    ) -> list[int]:
        """Applies the step in one transaction (all or nothing); the ids of the records added."""
        ids: list[int] = []
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if clear_journal:
                self.db.execute("DELETE FROM journal")
            self.db.executemany("INSERT INTO journal (kind, path, a, b) VALUES (?, ?, ?, ?)", undo)
            self.db.executemany("DELETE FROM record WHERE id = ?", [(i,) for i in drop])
            self.db.executemany("UPDATE record SET kind = ?, path = ?, a = ?, b = ? WHERE id = ?",
                                [(r.kind, r.path, r.a, r.b, r.id) for r in put])  # fmt: skip
            for record in add:
                cur = self.db.execute("INSERT INTO record (part, kind, path, a, b) VALUES (?, ?, ?, ?, ?)",
                                      (part, *record))  # fmt: skip
                ids.append(int(cur.lastrowid or 0))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return ids

    def restore(self, part: str, records: list[Rec]) -> None:
        """The part's manifest as RECORDS (ids kept): a failed part's rollback."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM record WHERE part = ?", (part,))
            self.db.executemany("INSERT INTO record (id, part, kind, path, a, b) VALUES (?, ?, ?, ?, ?, ?)",
                                [(r.id, part, r.kind, r.path, r.a, r.b) for r in records])  # fmt: skip
            self.db.execute("DELETE FROM journal")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
