"""The run's transaction over the store (txnstore.py): one part at a time, each step recorded before it acts,
a failed part undone from its journal; the install lock and a killed run's clean-up."""

from __future__ import annotations

import glob
import os
import shutil
import time

from .. import log, paths
from ..atomicfile import lock_within, open_lock
from ..errors import HostguardError
from . import safepath, txnstore, userio, webedit
from .hostfs import TMP, copy_a, is_dir, set_mode_owner, unlink_if
from .txnstore import Rec, Undo

STATE = paths.STATE_PATH
BACKUP_DIR = STATE + "/backup"
EDITED_DIR = STATE + "/edited"
STORE_FILES = [txnstore.DB_NAME + s for s in ("-wal", "-shm", "")]
# The install lock: a root-only file (0600) in /run (a tmpfs every host has), never
# a path a user can open (flock needs only a descriptor).
LOCK_PATH = "/run/hostguard-install.lock"
LOCK_WAIT = 600
Row = tuple[str, str, str, str]


class Txn:
    """The store, the running part's manifest in memory (`m`) and what the run did so far."""

    def __init__(self, root: str, installing: bool) -> None:
        self.root, self.installing = root, installing
        self.checked: set[str] = set()
        self.store: txnstore.Store | None = None
        self.part = ""
        self.m: dict[int, Rec] = {}
        self.found: list[Rec] = []
        self.orphans: list[str] = []
        self.active = self.changed = self.written = self.journaled = False
        self.state_mtime: int | None = None
        self.work = ""
        self.saved = 0
        self.lock_fd = -1

    def host(self, path: str) -> str:
        return self.root + path

    def root_dir(self, path: str) -> None:
        """Refuses unless every existing directory on PATH is root's and no link (checked once per run)."""
        if path not in self.checked:
            safepath.root_dir(path, self.root)
            self.checked.add(path)

    def step(self, add: list[Row] = [], put: list[Rec] = [],  # noqa: B006 - never mutated
             drop: list[int] = [], undo: list[Undo] = []) -> None:  # noqa: B006  # fmt: skip
        """One transaction of the store: the part's record changes and the journal entries, before acting."""
        assert self.store is not None
        have = {r[1:] for r in self.m.values()} if add else set()
        add = [r for r in dict.fromkeys(add) if r not in have]
        if not (add or put or drop or undo):
            return
        ids = self.store.step(self.part, add, put, drop, undo if self.active else [])
        for i in drop:
            del self.m[i]
        for rec in [*put, *(Rec(i, *new) for i, new in zip(ids, add))]:
            self.m[rec.id] = rec  # a record replaced keeps its place
        self.written = self.written or bool(add or put or drop)
        self.journaled = self.journaled or (self.active and bool(undo))

    def load(self, part: str) -> None:
        """The part's manifest in memory (as found: a failed part's rollback puts it back)."""
        assert self.store is not None
        self.part = part
        self.found = self.store.records(part)
        self.m = {r.id: r for r in self.found}

    def find(self, kind: str, path: str) -> Rec | None:
        """The part's first record of KIND for PATH."""
        return next((r for r in self.m.values() if (r.kind, r.path) == (kind, path)), None)

    def records(self, *kinds: str) -> list[Rec]:
        """The part's records of KINDS, oldest first."""
        return [r for r in self.m.values() if r.kind in kinds]

    def installed(self, part: str) -> bool:
        return self.store is not None and bool(self.store.records(part))

    def save(self, path: str) -> Undo:
        """The journal entry that puts host PATH back as it is now (a copy in the work directory, or nothing)."""
        copy = ""
        if self.active and os.path.lexists(path):
            self.saved += 1
            copy = f"{self.work}/saved.{self.saved}"
            copy_a(path, copy)
        return ("put-back", path, copy, "")

    def make_state(self) -> None:
        """The state directory: each directory made on its path (and a killed run's, found by recover) recorded
        in the store as its own (part ''), which is made with them; a failed first part takes them back."""
        made, cur = list(self.orphans), ""
        for comp in STATE.strip("/").split("/"):
            cur += "/" + comp
            if not os.path.isdir(self.host(cur)):
                os.mkdir(self.host(cur), 0o700)
                os.chmod(self.host(cur), 0o700 if cur == STATE else 0o755)
                made.append(cur)
        db = f"{self.host(STATE)}/{txnstore.DB_NAME}"
        new = not os.path.exists(db)
        self.store = txnstore.Store(db)
        if new:
            undo = [("remove-dir", self.host(d), "", "") for d in made] + [("remove-store", db, "", "")]
            self.step(add=[("dir", d, "", "") for d in made], undo=undo)
            self.written = True
        self.orphans = []

    def begin(self, part: str) -> None:
        """Opens the part's transaction: the state directory and the store (made if missing), the work dir."""
        self.part, self.active, self.changed, self.journaled = "", True, False, False
        self.m = {}
        self.root_dir(STATE)
        if self.store is None:
            self.make_state()
        self.state_mtime = self.state_mtime or os.stat(self.host(STATE)).st_mtime_ns
        self.work = f"{self.host(STATE)}/{TMP}work"
        shutil.rmtree(self.work, ignore_errors=True)
        os.mkdir(self.work, 0o700)
        self.load(part)

    def commit(self) -> None:
        if self.journaled and self.store is not None:
            self.store.step(self.part, clear_journal=True)
        self.active = self.journaled = False

    def rollback(self) -> None:
        """Undoes the running part from its journal, newest first; then its manifest as found."""
        self.active = False
        if self.store is None:
            return
        for entry in reversed(self.store.journal()):
            if entry.kind == "remove-store":
                # The oldest entries: the saved copies are spent; the work dir goes with the state dir.
                self.close_store()
                self.close_work()
            try:
                undo(entry, self.root)
            except (OSError, HostguardError) as exc:
                log.log("WARN", f"rollback: {entry.kind} {entry.path}: {exc}")
        if self.store is not None:
            self.store.restore(self.part, self.found)

    def close_store(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def close_work(self) -> None:
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = ""

    def drop_store(self) -> None:
        """backup/ and edited/ go once empty; with no part left, the store, then the state directories it
        made, deepest first, while empty (after a crash between the two, recover finds them)."""
        for folder in (BACKUP_DIR, EDITED_DIR):
            if is_dir(self.host(folder)) and not os.listdir(self.host(folder)):
                os.rmdir(self.host(folder))
        chain = self.orphans
        if self.store is not None:
            if self.store.parts() - {""}:
                return
            chain = [r.path for r in self.store.records("") if r.kind == "dir"]
            self.close_store()
            for name in STORE_FILES:
                unlink_if(f"{self.host(STATE)}/{name}")
        for folder in chain[::-1]:
            if is_dir(self.host(folder)) and not os.listdir(self.host(folder)):
                os.rmdir(self.host(folder))
        self.orphans = []

    def finish(self) -> None:
        """The end of every run: no store open, no work dir; a run that recorded nothing leaves the state
        directory's mtime as it found it."""
        self.close_store()
        self.close_work()
        state = self.host(STATE)
        if self.state_mtime and not self.written and os.path.isdir(state):
            os.utime(state, ns=(os.stat(state).st_atime_ns, self.state_mtime))


def undo(entry: Rec, root: str) -> None:
    """One journal entry of a failed part, undone (the kinds: txnstore.py)."""
    kind, path, a, b = entry[1:]
    if kind == "put-back":
        unlink_if(path)
        if a:
            copy_a(a, path)
    elif kind == "user-file":
        with open(b, "rb") as f:
            # A fresh bound: the run's own may be what was spent.
            webedit.Web(root, time.time() + userio.TOTAL_SECONDS).write(a, path, f.read())
    elif kind == "remove-dir":
        os.rmdir(path)
    elif kind == "set-mode":
        set_mode_owner(path, a, b)
    elif kind == "remove-store":
        for name in STORE_FILES:
            unlink_if(f"{os.path.dirname(path)}/{name}")


def lock(t: Txn) -> None:
    """One run at a time per root (a deploy runs the parts in parallel); the lock goes with the process."""
    if t.root and not os.path.exists(t.host("/run")):
        os.mkdir(t.host("/run"), 0o755)
        os.chmod(t.host("/run"), 0o755)  # noqa: S103 - a test root's /run, as a host's
    t.root_dir("/run")
    path = t.host(LOCK_PATH)
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
        raise HostguardError(f"{LOCK_PATH} is not a regular file: refused (remove it)")
    t.lock_fd = open_lock(path)
    st = os.fstat(t.lock_fd)
    if (st.st_uid, st.st_mode & 0o7777) != (0, 0o600):
        os.fchown(t.lock_fd, 0, 0)
        os.fchmod(t.lock_fd, 0o600)
    if not lock_within(t.lock_fd, LOCK_WAIT, 0.05):
        raise HostguardError(f"another install run kept {LOCK_PATH} locked for {LOCK_WAIT} s")


def recover(t: Txn) -> None:
    """Removes what a killed run left (the work dir, temp files, a store without records); drops a dead run's
    journal, and the temp file beside each user's file it names; with no store, finds the state directories
    a run killed before its first step (or after the store went) made."""
    state = t.host(STATE)
    if is_dir(state):
        t.root_dir(STATE)
        shutil.rmtree(f"{state}/{TMP}work", ignore_errors=True)
        t.state_mtime = os.stat(state).st_mtime_ns
        if os.path.exists(f"{state}/{txnstore.DB_NAME}"):
            t.store = txnstore.Store(f"{state}/{txnstore.DB_NAME}")
        if t.store is not None and t.store.journal():
            drop_user_temps(t, t.store.journal())
            t.store.step("", clear_journal=True)
        if t.store is not None and not t.store.parts():
            # Made by a run killed before its first step: no store yet.
            t.close_store()
            for name in STORE_FILES:
                unlink_if(f"{state}/{name}")
        if t.store is None:
            t.orphans = orphan_chain(t)
    conf = t.host(paths.CONF_PATH)
    if is_dir(conf):
        t.root_dir(paths.CONF_PATH)
        for temp in glob.glob(f"{glob.escape(conf)}/{TMP}*"):
            os.unlink(temp)


def drop_user_temps(t: Txn, journal: list[Rec]) -> None:
    """The temp file beside each user's file a dead run's journal names (user-file: journaled before every
    write of it, kept until after the rename), removed as its controller; what cannot be is named."""
    web = webedit.Web(t.root, time.time() + userio.TOTAL_SECONDS, plan=False)
    for entry in journal:
        if entry.kind != "user-file":
            continue
        try:
            web.drop_temp(entry.a, entry.path)
        except (OSError, HostguardError) as exc:
            temp = os.path.join(os.path.dirname(entry.path), TMP + os.path.basename(entry.path))
            log.log("WARN", f"{temp}, a killed run's temp file, may be left: {exc}")


def orphan_chain(t: Txn) -> list[str]:
    """The empty state directory and each parent holding only it, top first: what the installer makes."""
    chain: list[str] = []
    cur = STATE
    while cur and os.listdir(t.host(cur)) == ([os.path.basename(chain[-1])] if chain else []):
        chain.append(cur)
        cur = os.path.dirname(cur).rstrip("/")
    return chain[::-1]
