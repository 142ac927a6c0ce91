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
  pending PATH COPY / edited PATH COPY / log PATH / runtime PATTERN KIND /
  include REAL TOKEN / props REAL RECORD / prop, propadd (bash era) / reload pending
The state directory's own chain (`dir` records of it) is the store's, part ''.
`journal` is the running part's undo list (a dead run's is dropped: its
copies went with the work directory, and its manifest says what to undo).
The bash installer's text manifests (install-PART.manifest) are imported on
the first run, each in one transaction that also notes its hash, so a run
killed between that commit and the removal of the file does not import it twice.
"""

from __future__ import annotations

import hashlib
import os
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
CREATE TABLE IF NOT EXISTS imported (name TEXT PRIMARY KEY, sha256 TEXT NOT NULL);
"""


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
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'imported'").fetchone():
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

    def import_legacy(self, state_dir: str, state_path: str) -> list[str]:
        """Imports the bash installer's install-PART.manifest files in STATE_DIR; the names imported."""
        done: list[str] = []
        for name in sorted(os.listdir(state_dir)):
            if not (name.startswith("install-") and name.endswith(".manifest")):
                continue
            path = os.path.join(state_dir, name)
            with open(path, "rb") as f:
                data = f.read()
            digest = hashlib.sha256(data).hexdigest()
            seen = self.db.execute("SELECT sha256 FROM imported WHERE name = ?", (name,)).fetchone()
            if not seen or seen[0] != digest:
                part = name[len("install-") : -len(".manifest")]
                rows = []
                for line in data.decode("utf-8", "surrogateescape").split("\n"):
                    if line:
                        kind, where, a, b = [*line.split("\t", 3), "", "", ""][:4]
                        # The state directory's chain is the store's: it goes when no part is left.
                        chain = kind == "dir" and (state_path + "/").startswith(where + "/")
                        rows.append(("" if chain else part, kind, where, a, b))
                self.db.execute("BEGIN IMMEDIATE")
                try:
                    self.db.executemany("INSERT INTO record (part, kind, path, a, b) VALUES (?, ?, ?, ?, ?)", rows)
                    self.db.execute("INSERT OR REPLACE INTO imported VALUES (?, ?)", (name, digest))
                    self.db.execute("COMMIT")
                except BaseException:
                    self.db.execute("ROLLBACK")
                    raise
            os.unlink(path)
            done.append(name)
        return done
