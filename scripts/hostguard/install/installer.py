"""The installer: puts the payload beside it in place under a root prefix (default /), and takes it out again.

`install install|uninstall|list|set-webhook|set-heartbeat` (USAGE); the shim
`install` beside hostguard/ checks the interpreter, then runs main(). Files
go in atomically (temp name beside the destination, then a rename), each step
recorded first in the transaction store (txnstore.py: manifests and undo
journal), so uninstall removes exactly what install added and restores what
it changed, even after a crash; a failed part is rolled back from the
journal. Reads the bundle beside it (its expanded files.table, the files it
lists, hostguard.conf or --settings FILE), the store, NGINX_SERVER_CONF and
APP_PROPERTIES (webedit.py). Services (nginx, fail2ban) are tested and
reloaded (services.py) only when the root is / and the part changed them.
"""

from __future__ import annotations

import errno
import glob
import hashlib
import os
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.parse
from types import FrameType

from .. import log, paths, runtime_files, settings
from ..atomicfile import lock_within, write_new
from ..errors import EX_USAGE, HostguardError
from ..format_table import FORMAT_LINE_RE, ROUTING_KEY_LINE_RE
from ..notify import formats
from ..settings import Settings
from ..settings_table import FILE_ROW_ALLOWED, FILE_ROW_RE, FILE_SKIP_RE, PARTS, URL_RE
from . import (
    f2bcode,
    programs,
    properties,
    rotation,
    safepath,
    services,
    sshjournal,
    txnstore,
    userio,
    webedit,
    workershutdown,
)
from .txnstore import Rec, Undo

# The webhook file's lines beside its URL (urlfile.py reads them).
EXTRA_LINES = (("format", FORMAT_LINE_RE), ("routing_key", ROUTING_KEY_LINE_RE))

USAGE = """usage: install install [--part base|monitors|bantool|web] [--root DIR] [--settings FILE]
                         (from a rendered bundle: its files.table and hostguard.conf beside this script)
       install uninstall [--part base|monitors|bantool|web] [--root DIR]
       install set-webhook [--verify] [--root DIR]   (URL or curl line `url = "https://..."` on stdin;
                         --verify: in place only once the connectivity test was delivered)
       install set-heartbeat [--remove] [--root DIR]   (the heartbeat URL, the same way; --remove: none)
       install list [--part PART]         (the file table: part, source, destination, mode)
"""
TMP = safepath.TMP_PREFIX
STATE = paths.STATE_PATH
BACKUP_DIR = STATE + "/backup"
EDITED_DIR = STATE + "/edited"
FILE_TABLE = "files.table"
# The install lock: a root-only file (0600) in /run (a tmpfs every host has), never
# a path a user can open (flock needs only a descriptor).
LOCK_PATH = "/run/hostguard-install.lock"
LOCK_WAIT = 600
# Directories each part owns; parents are created 0755 as needed.
DIRS = [("base", paths.LIB_PATH, 0o755), ("base", paths.CONF_PATH, 0o700), ("base", STATE, 0o700),
        ("base", paths.SPOOL_PATH, 0o700), ("base", paths.LOG_PATH, 0o755),
        ("monitors", paths.LOG_PATH, 0o755)]  # fmt: skip
MONITOR_LOGS = ("host-monitor", "container-monitor")
SERVICE = {"bantool": "fail2ban", "web": "nginx"}
# Part web's http-context drop-in when the stack sets trustedProxies (components/hostFiles.ts).
REALIP_DROPIN = "/etc/nginx/conf.d/hostguard-realip.conf"
WEB_KINDS = ("include", "props")
STORE_FILES = [txnstore.DB_NAME + s for s in ("-wal", "-shm", "")]


class Usage(Exception):
    """A command line that does not fit USAGE (exit 64 after printing it)."""


def die(text: str) -> HostguardError:
    return HostguardError(text)


def warn(text: str) -> None:
    log.log("WARN", text)


def is_file(path: str) -> bool:
    return os.path.isfile(path) and not os.path.islink(path)


def is_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def unlink_if(path: str) -> None:
    if os.path.lexists(path):
        os.unlink(path)


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def copy_a(src: str, dst: str) -> None:
    """`cp -a` of one file or symlink (content, mode, owner, mtime)."""
    st = os.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    else:
        shutil.copyfile(src, dst, follow_symlinks=False)
        os.chmod(dst, stat.S_IMODE(st.st_mode))
    os.chown(dst, st.st_uid, st.st_gid, follow_symlinks=False)
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def same(a: str, b: str) -> bool:
    """Equal regular files, or symlinks with the same target."""
    if os.path.islink(a) and os.path.islink(b):
        return os.readlink(a) == os.readlink(b)
    if is_file(a) and is_file(b):
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    return False


def mode_owner(path: str) -> tuple[str, str]:
    st = os.stat(path)
    return f"{stat.S_IMODE(st.st_mode):o}", f"{st.st_uid}:{st.st_gid}"


def set_mode_owner(path: str, mode: str, owner: str) -> None:
    os.chmod(path, int(mode, 8))
    os.chown(path, *map(int, owner.split(":")))


def temp_beside(path: str) -> str:
    return f"{os.path.dirname(path)}/{TMP}{os.path.basename(path)}"


def read_url(data: bytes, what: str = "webhook") -> tuple[str, str]:
    """The secret URL from the first meaningful line, bare or as a curl config url line, and (the
    webhook's) the format and routing_key lines after it, as the file keeps them (format_table's rules).
    An other line is refused naming its place, never its text."""
    lines = [raw.strip(" \t\r\f\v") for raw in data.decode("utf-8", "surrogateescape").split("\n")]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        return "", ""
    m = re.fullmatch(r'url[ \t\r\f\v]*[=:]?[ \t\r\f\v]*"([^"]*)"', lines[0]) or re.fullmatch(
        r'url[ \t\r\f\v]*[=:]?[ \t\r\f\v]*([^ \t\r\f\v"]+)', lines[0]
    )
    extras = lines[1:]
    kinds = [next((k for k, rule in EXTRA_LINES if re.fullmatch(rule, line)), "") for line in extras]
    if extras and (what != "webhook" or "" in kinds or len(set(kinds)) != len(kinds)):
        raise die(f'set-{what}: refused: after the URL only one format = "..." and one routing_key = "..."'
                  " line may follow, for the webhook (value not shown)")  # fmt: skip
    return (m.group(1) if m else lines[0]), "".join(line + "\n" for line in extras)


def check_format(url: str, extras: str) -> None:
    """Refuses a webhook whose format line contradicts its URL's host or whose routing key is amiss, as the
    notifier would read it (formats.checked): never written to fail every delivery."""
    found = {name: m.group(1) for name, rule in EXTRA_LINES for m in re.finditer(rule, extras, re.M)}
    try:
        formats.checked(url, found.get("format", ""), found.get("routing_key", ""))
    except formats.FormatError as error:
        raise die(f"set-webhook: refused: {error}") from None


def undelivered(path: str) -> int:
    """The messages in the spool database PATH (read-only: the notifier's module is not imported); 0 when
    it cannot be read."""
    try:
        db = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True)
        try:
            return int(db.execute("SELECT count(*) FROM message").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


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


class Installer:
    def __init__(self, command: str, part: str, root: str, settings: str, remove: bool, verify: bool = False) -> None:
        self.command, self.root, self.remove, self.verify = command, root, remove, verify
        self.parts = [part] if part else list(PARTS)
        self.bundle = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.settings_file = settings or f"{self.bundle}/hostguard.conf"
        self.settings: Settings | None = None
        self.rows: list[tuple[str, str, str, str]] | None = None
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

    # ---- paths and the file table ---------------------------------------------

    def host(self, path: str) -> str:
        return self.root + path

    def root_dir(self, path: str) -> None:
        """Refuses unless every existing directory on PATH is root's and no link (checked once per run)."""
        if path not in self.checked:
            safepath.root_dir(path, self.root)
            self.checked.add(path)

    def table(self) -> list[tuple[str, str, str, str]]:
        """Every row (part, source, destination, mode) of the bundle's expanded table; a bad line stops the run."""
        if self.rows is None:
            path = f"{self.bundle}/{FILE_TABLE}"
            if not os.path.isfile(path):
                raise die(f"{FILE_TABLE} missing beside {self.bundle}/install")
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                lines = f.read().split("\n")
            self.rows = []
            for number, line in enumerate(lines, start=1):
                if re.match(FILE_SKIP_RE, line, re.DOTALL):
                    continue
                if not re.match(FILE_ROW_RE, line):
                    raise die(f"{FILE_TABLE}:{number}: expected PART SOURCE DESTINATION MODE ({FILE_ROW_ALLOWED})")
                part, src, dest, mode = line.split()
                self.rows.append((part, src, dest, mode))
        return self.rows

    def part_files(self, part: str) -> list[tuple[str, str, int]]:
        return [(src, dest, int(mode, 8)) for p, src, dest, mode in self.table() if p == part]

    def source_file(self, src: str, dest: str) -> str:
        """In the bundle, except the settings file, which --settings replaces."""
        return self.settings_file if dest == paths.SETTINGS_PATH else f"{self.bundle}/{src}"

    # ---- the store and the journal -------------------------------------------

    def step(self, add: list[tuple[str, str, str, str]] = [], put: list[Rec] = [],  # noqa: B006 - never mutated
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

    def save(self, path: str) -> Undo:
        """The journal entry that puts host PATH back as it is now (a copy in the work directory, or nothing)."""
        copy = ""
        if self.active and os.path.lexists(path):
            self.saved += 1
            copy = f"{self.work}/saved.{self.saved}"
            copy_a(path, copy)
        return ("put-back", path, copy, "")

    def open_store(self) -> None:
        db = f"{self.host(STATE)}/{txnstore.DB_NAME}"
        if self.store is None and os.path.exists(db):
            self.store = txnstore.Store(db)

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
                warn(f"rollback: {entry.kind} {entry.path}: {exc}")
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

    # ---- lock and recovery ---------------------------------------------------

    def lock(self) -> None:
        """One run at a time per root (a deploy runs the parts in parallel); the lock goes with the process."""
        if self.root and not os.path.exists(self.host("/run")):
            os.mkdir(self.host("/run"), 0o755)
            os.chmod(self.host("/run"), 0o755)  # noqa: S103 - a test root's /run, as a host's
        self.root_dir("/run")
        path = self.host(LOCK_PATH)
        if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
            raise die(f"{LOCK_PATH} is not a regular file: refused (remove it)")
        self.lock_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        st = os.fstat(self.lock_fd)
        if (st.st_uid, stat.S_IMODE(st.st_mode)) != (0, 0o600):
            os.fchown(self.lock_fd, 0, 0)
            os.fchmod(self.lock_fd, 0o600)
        if not lock_within(self.lock_fd, LOCK_WAIT, 0.05):
            raise die(f"another install run kept {LOCK_PATH} locked for {LOCK_WAIT} s")

    def recover(self) -> None:
        """Removes what a killed run left (the work dir, temp files, a store without records); drops a dead run's
        journal; with no store, finds the state directories a run killed before its first step (or after the
        store went) made."""
        state = self.host(STATE)
        if is_dir(state):
            self.root_dir(STATE)
            shutil.rmtree(f"{state}/{TMP}work", ignore_errors=True)
            self.state_mtime = os.stat(state).st_mtime_ns
            self.open_store()
            if self.store is not None and not self.store.parts():
                # Made by a run killed before its first step: no store yet.
                self.close_store()
                for name in STORE_FILES:
                    unlink_if(f"{state}/{name}")
            if self.store is not None and self.store.journal():
                self.store.step("", clear_journal=True)
            if self.store is None:
                self.orphans = self.orphan_chain()
        conf = self.host(paths.CONF_PATH)
        if is_dir(conf):
            self.root_dir(paths.CONF_PATH)
            for temp in glob.glob(f"{glob.escape(conf)}/{TMP}*"):
                os.unlink(temp)

    def orphan_chain(self) -> list[str]:
        """The empty state directory and each parent holding only it, top first: what the installer makes."""
        chain: list[str] = []
        cur = STATE
        while cur and os.listdir(self.host(cur)) == ([os.path.basename(chain[-1])] if chain else []):
            chain.append(cur)
            cur = os.path.dirname(cur).rstrip("/")
        return chain[::-1]

    # ---- files ---------------------------------------------------------------

    def ensure_dir(self, folder: str, mode: int | None = None) -> None:
        """Creates FOLDER (parents 0755), recording each directory first; with MODE (hostguard's own
        directories) also sets it and root ownership, remembering an old mode for uninstall."""
        self.root_dir(folder)
        cur = ""
        for comp in folder.strip("/").split("/"):
            cur += "/" + comp
            if os.path.isdir(self.host(cur)):
                continue
            self.step(add=[("dir", cur, "", "")], undo=[("remove-dir", self.host(cur), "", "")])
            os.mkdir(self.host(cur), 0o755)
            os.chmod(self.host(cur), 0o755)  # noqa: S103 - parents of hostguard's directories, root's
            os.chown(self.host(cur), 0, 0)
        old = mode_owner(self.host(folder))
        if mode is not None and old != (f"{mode:o}", "0:0"):
            fresh = not self.find("dir", folder) and not self.find("mode", folder)
            self.step(add=[("mode", folder, *old)] if fresh else [], undo=[("set-mode", self.host(folder), *old)])
            os.chown(self.host(folder), 0, 0)
            os.chmod(self.host(folder), mode)

    def write_atomic(self, content: bytes, dest: str, mode: int, add: list[tuple[str, str, str, str]],
                     put: list[Rec]) -> None:  # fmt: skip
        """Fixed temp name beside DEST, owner and mode set, then renamed: readers see the old file or the new.
        ADD and PUT, the records of the write, go in the step that journals it."""
        path = self.host(dest)
        tmp = temp_beside(path)
        self.step(add=add, put=put, undo=[self.save(path), ("put-back", tmp, "", "")])
        write_new(tmp, content, mode)
        os.replace(tmp, path)

    def unedited(self, dest: str, hashes: str) -> bool:
        """A regular file whose sha256 is in HASHES ("-" or empty: not kept, always unedited)."""
        if hashes in ("", "-"):
            return True
        path = self.host(dest)
        return is_file(path) and sha256_file(path) in hashes.split(",")

    def keep_copy(self, folder: str, kind: str, dest: str, tag: str = "") -> str:
        """Host path DEST copied (file or dangling link) into FOLDER (made 0700, shared by the parts, removed
        by uninstall once empty), recorded first as KIND; the copy's path."""
        name = hashlib.sha256(dest.encode("utf-8", "surrogateescape")).hexdigest()
        copy = f"{folder}/{name}{'.' + tag if tag else ''}"
        if not os.path.isdir(self.host(folder)):
            self.step(undo=[("remove-dir", self.host(folder), "", "")])
            os.mkdir(self.host(folder), 0o700)
        to = self.host(copy)
        self.step(add=[(kind, dest, copy, "")], undo=[self.save(to), ("put-back", temp_beside(to), "", "")])
        unlink_if(temp_beside(to))
        copy_a(self.host(dest), temp_beside(to))
        os.replace(temp_beside(to), to)
        return copy

    def install_file(self, content: bytes, dest: str, mode: int) -> None:
        """CONTENT at DEST with MODE, root's; unchanged: nothing written. What was there is kept first: a
        user's own file (or symlink) as a backup uninstall puts back, an admin's edit as a copy it names."""
        self.ensure_dir(os.path.dirname(dest))
        path = self.host(dest)
        if is_dir(path):
            raise die(f"{dest} is a directory: refused")
        if is_file(path) and mode_owner(path) == (f"{mode:o}", "0:0"):
            with open(path, "rb") as f:
                if f.read() == content:
                    return
        want = hashlib.sha256(content).hexdigest()
        rec = self.find("file", dest) or self.find("backup", dest)
        add, put = [("reload", "pending", "", "")], []
        if rec is not None:
            copy, hashes = (rec.a, rec.b) if rec.kind == "backup" else ("", rec.a)
            # Neither what install wrote nor (a run killed before its write) the original it kept.
            if os.path.lexists(path) and not self.unedited(dest, hashes) and not (copy and same(path, self.host(copy))):
                copy_at = self.keep_copy(EDITED_DIR, "edited", dest, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
                warn(f"{dest} was edited since install: your version is kept at {copy_at}")
            # The new hash first, the previous one kept: a run killed between this record and the
            # write leaves a file that is still "not edited".
            if want not in hashes.split(","):
                hashes = want + ("," + hashes.split(",")[0] if hashes else "")
            put = [rec._replace(b=hashes) if copy else rec._replace(a=hashes)]
        elif os.path.lexists(path):
            # A user's own file: recorded as pending, copied, then recorded as the backup.
            copy = self.keep_copy(BACKUP_DIR, "pending", dest)
            pending = self.find("pending", dest)
            assert pending is not None
            self.step(put=[Rec(pending.id, "backup", dest, copy, want)])
        else:
            add.insert(0, ("file", dest, want, ""))
        self.changed = True
        self.write_atomic(content, dest, mode, add, put)
        log.info(f"installed {dest}")

    def remove_file(self, dest: str) -> None:
        """Removes DEST (and a temp file a killed run left beside it)."""
        self.root_dir(os.path.dirname(dest))
        path = self.host(dest)
        unlink_if(temp_beside(path))
        if not os.path.lexists(path):
            return
        self.step(undo=[self.save(path)])
        os.unlink(path)
        self.changed = True
        log.info(f"removed {dest}")

    def uninstall_file(self, dest: str, hashes: str) -> None:
        if os.path.lexists(self.host(dest)) and not self.unedited(dest, hashes):
            warn(f"{dest} was edited since install: left in place")
            return
        self.remove_file(dest)
        cache = self.host(f"{os.path.dirname(dest)}/__pycache__")
        if dest.endswith(".py") and is_dir(cache):
            # The bytecode Python wrote for it goes with it (and the temp file of a write a kill cut
            # short: `NAME.TAG.pyc.<digits>`); the folder when empty.
            self.root_dir(cache[len(self.root) :])
            stem = f"{glob.escape(cache)}/{glob.escape(os.path.basename(dest)[:-3])}"
            for pyc in glob.glob(f"{stem}.*.pyc") + glob.glob(f"{stem}.*.pyc.[0-9]*"):
                if is_file(pyc):
                    os.unlink(pyc)
            if not os.listdir(cache):
                os.rmdir(cache)

    def restore_backup(self, dest: str, copy: str, hashes: str) -> None:
        """A user's file install replaced: put back unless the installed one was edited since."""
        path, kept = self.host(dest), self.host(copy)
        if not os.path.lexists(kept):
            warn(f"backup of {dest} is missing: left as it is")
            return
        if os.path.lexists(path) and not self.unedited(dest, hashes) and not same(path, kept):
            warn(f"{dest} was edited since install: left in place; the original is kept at {copy}")
            return
        self.root_dir(os.path.dirname(dest))
        tmp = temp_beside(path)
        unlink_if(tmp)
        self.step(undo=[self.save(path), self.save(kept), ("put-back", tmp, "", "")])
        try:
            os.replace(kept, path)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            # Another filesystem (a bind mount): a copy beside it, renamed over it, then the backup goes.
            copy_a(kept, tmp)
            os.replace(tmp, path)
            os.unlink(kept)
        self.changed = True
        log.info(f"restored {dest}")

    # ---- install -------------------------------------------------------------

    def load_settings(self) -> None:
        path = self.settings_file
        if not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise die(f"settings file {path} not readable (install runs from a rendered bundle, or give --settings"
                      " FILE)")  # fmt: skip
        self.settings = settings.load(path)

    def check_programs(self) -> None:
        """A part whose programs are missing changes nothing, not even a killed run's clean-up."""
        s = self.settings
        assert s is not None
        missing = programs.check(self.parts, self.root, self.bundle, s.container_runtime, s.container_monitor)
        if missing:
            raise die(f"install refused before any change: {missing} program(s) missing (above); install the"
                      " package(s) named and run it again")  # fmt: skip

    def preflight(self) -> None:
        """Everything that could fail for a reason other than the disk, before the first write."""
        self.table()
        self.root_dir(STATE)
        for part in self.parts:
            for src, dest, _ in self.part_files(part):
                if not os.path.isfile(self.source_file(src, dest)):
                    raise die(f"payload file {src} missing beside {self.bundle}/install")
                self.root_dir(os.path.dirname(dest))
                if is_dir(self.host(dest)):
                    raise die(f"{dest} is a directory: refused")
            for folder in (d for p, d, _ in DIRS if p == part):
                self.root_dir(folder)
            if part == "web":
                self.web_read(plan=False)
                if any(dest == REALIP_DROPIN for _, dest, _ in self.part_files("web")) and shutil.which("nginx"):
                    run = subprocess.run(["nginx", "-V"], capture_output=True, timeout=10, check=False)
                    if b"--with-http_realip_module" not in run.stdout + run.stderr:
                        raise die(f"part web: trustedProxies needs nginx's realip module (ngx_http_realip_module)"
                                  f" for {REALIP_DROPIN}, and this nginx was built without it (nginx -V); Debian's"
                                  " and Ubuntu's nginx packages have it")  # fmt: skip

    def web_read(self, plan: bool = True) -> webedit.Web:
        assert self.settings is not None
        web = webedit.Web(self.root, time.time() + userio.TOTAL_SECONDS, plan)
        if self.settings.nginx_server_conf:
            web.nginx(self.settings.nginx_server_conf)
        if self.settings.app_properties:
            web.props(self.settings.app_properties)
        return web

    def web_apply(self, web: webedit.Web, undoing: bool) -> None:
        """Records every change (install) and journal entry in one step, then writes each file."""
        for level, text in web.notes:
            log.log(level, text)
        if not web.changes:
            return
        entries: list[Undo] = []
        records = []
        for c in web.changes:
            self.saved += 1  # one name per copy of the run (an install may undo, then edit)
            with open(f"{self.work}/user.{self.saved}", "wb") as f:
                f.write(c.old)
            entries.append(("user-file", c.real, c.label, f"{self.work}/user.{self.saved}"))
            records += [] if undoing else [(c.kind, c.real, c.extra[0], "")]
        include = any(c.kind == "include" for c in web.changes)
        # An install owes nginx its reload until done (a killed run's next one reloads), undoing included.
        records += [("reload", "pending", "", "")] if include and self.command == "install" else []
        self.step(add=records, undo=entries)
        self.changed = self.changed or include
        for c in web.changes:
            web.write(c.label, c.real, c.new)
        for c in web.changes:
            if c.kind == "include":
                added = f"added the deny include to {c.extra[1] if c.extra else 0} server and location block(s)"
                log.info(f"removed the deny include from {c.real}" if undoing else f"{added} of {c.real}")
            else:
                doc = f"final document {properties.KEY}=false"
                done = f"removed the {doc} from" if undoing else f"appended a {doc} to"
                log.info(f"{done} {c.real}; restart the application to apply it")

    def web_converge(self) -> None:
        """The users' files as the current settings edit them: an earlier install's edit they no longer make
        (another or no NGINX_SERVER_CONF or APP_PROPERTIES, a file no longer included) is undone first, as
        uninstall undoes it; then the edits they make are placed."""
        web = self.web_read()
        recs = [r for r in self.m.values() if r.kind in WEB_KINDS]
        stale = [recs[n] for n in webedit.stale([(r.kind, r.path) for r in recs], web)]
        if stale:
            edit = webedit.Web(self.root, time.time() + userio.TOTAL_SECONDS)
            for rec in stale[::-1]:
                edit.undo(rec.kind, rec.path, [rec.a, rec.b])
            self.web_apply(edit, undoing=True)
            self.step(drop=[r.id for r in stale])
        self.web_apply(web, undoing=False)

    def services_apply(self, part: str, undoing: bool = False) -> None:
        if self.changed and part in SERVICE:
            services.apply(SERVICE[part], self.root, undoing)
        elif not undoing and not self.root and self.code_moved(part):
            services.apply("fail2ban", self.root)  # restarts it: the code it runs is not what is installed

    def code_moved(self, part: str) -> bool:
        """hostguard's code on disk is not what fail2ban-server loaded (f2bcode.py): after part bantool,
        or after part base once install started fail2ban with its actions."""
        if part not in ("base", "bantool") or not services.run_quiet("fail2ban-client", "ping"):
            return False
        loaded = f2bcode.recorded()
        return (part == "bantool" or loaded is not None) and loaded != f2bcode.digest()

    def install_part(self, part: str) -> None:
        assert self.settings is not None
        self.begin(part)
        # A backup pending (a crash between recording and copying): the original is still in place.
        for rec in [r for r in self.m.values() if r.kind == "pending"][::-1]:
            unlink_if(self.host(rec.a))
            self.step(drop=[rec.id])
        # A run killed after a change and before its reload: reload now.
        self.changed = self.find("reload", "pending") is not None
        for folder, mode in ((d, m) for p, d, m in DIRS if p == part):
            self.ensure_dir(folder, mode)
        # The part's programs write files while running (runtime_files.TABLE): noted before they are placed.
        self.step(add=[("runtime", part, "", "")])
        skip = self.not_wanted(part)
        for src, dest, mode in self.part_files(part):
            if dest in skip:
                continue
            with open(self.source_file(src, dest), "rb") as f:
                self.install_file(f.read(), dest, mode)
        if part == "bantool" and (self.find("file", sshjournal.DROPIN) or sshjournal.needed(self.root)):
            self.install_file(sshjournal.CONTENT, sshjournal.DROPIN, 0o644)  # kept once placed, until uninstall
        self.remove_dropped(part, skip)
        if part == "monitors":
            self.monitor_logs()
        if part == "web":
            self.web_converge()
        self.services_apply(part)
        reload = self.find("reload", "pending")
        self.step(drop=[reload.id] if reload else [])
        self.commit()
        self.close_work()

    def not_wanted(self, part: str) -> set[str]:
        """Rows of PART this host does not get: the worker drop-in where nginx would not read it or the user
        sets their own (install/workershutdown.py)."""
        if part != "web" or workershutdown.DROPIN not in {d for _, d, _ in self.part_files(part)}:
            return set()
        return set() if workershutdown.wanted(self.root, self.host) else {workershutdown.DROPIN}

    def remove_dropped(self, part: str, skip: set[str]) -> None:
        """Files an earlier install of PART placed that its table no longer lists (or lists in SKIP): undone as
        uninstall does (a URL file set-webhook wrote, kept without a hash, is no row and stays)."""
        listed = {dest for _, dest, _ in self.part_files(part)} | ({sshjournal.DROPIN} if part == "bantool" else set())
        listed -= skip
        for rec in list(self.m.values())[::-1]:
            if rec.path in listed or rec.kind not in ("file", "backup") or (rec.kind, rec.a) == ("file", "-"):
                continue
            self.uninstall_file(rec.path, rec.a) if rec.kind == "file" else self.restore_backup(rec.path, rec.a, rec.b)
            self.step(drop=[rec.id])

    def monitor_logs(self) -> None:
        """Logs exist before cron's first append (0640, not cron's umask); uninstall removes them while empty."""
        assert self.settings is not None
        for name in MONITOR_LOGS:
            dest = f"{paths.LOG_PATH}/{name}.log"
            if name == "container-monitor" and not self.settings.container_monitor:
                # Not scheduled any more: the empty log an earlier install made goes, as uninstall takes it.
                rec = self.find("log", dest)
                if rec is not None and not (is_file(self.host(dest)) and os.path.getsize(self.host(dest))):
                    self.remove_file(dest)
                    self.step(drop=[rec.id])
                continue
            if os.path.lexists(self.host(dest)):
                continue
            self.step(add=[("log", dest, "", "")], undo=[("put-back", self.host(dest), "", "")])
            # Created 0640 at once: a run killed before a chmod would leave a 0600 log the next run keeps.
            old = os.umask(0o137)
            try:
                fd = os.open(self.host(dest), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
            finally:
                os.umask(old)
            os.fchown(fd, 0, 0)
            os.close(fd)

    # ---- uninstall -----------------------------------------------------------

    def uninstall_part(self, part: str) -> None:
        if self.store is None or not self.store.records(part):
            log.info(f"part {part}: nothing installed")
            return
        self.begin(part)
        # Users' files first (their records are the part's newest), newest first, in one step.
        web = [r for r in self.m.values() if r.kind in WEB_KINDS][::-1]
        if web:
            edit = webedit.Web(self.root, time.time() + userio.TOTAL_SECONDS)
            for rec in web:
                edit.undo(rec.kind, rec.path, [rec.a, rec.b])
            self.web_apply(edit, undoing=True)
            self.step(drop=[r.id for r in web])
        # Newest first; each record goes once undone, so a run killed midway leaves exactly what is left to undo.
        for rec in list(self.m.values())[::-1]:
            if rec.kind not in ("dir", "runtime"):
                self.undo_record(rec)
                self.step(drop=[rec.id])
        self.remove_runtime_files()
        self.services_apply(part, undoing=True)
        self.commit()
        # The part's directories, deepest first, when empty.
        for rec in [r for r in self.m.values() if r.kind == "dir"][::-1]:
            path = self.host(rec.path)
            if is_dir(path) and os.listdir(path):
                log.info(f"kept {rec.path}: not empty")
            elif is_dir(path):
                os.rmdir(path)
            self.step(drop=[rec.id])
        self.close_work()
        self.drop_store()
        log.info(f"part {part} uninstalled")

    def undo_record(self, rec: Rec) -> None:
        """What install did for one record of the manifest, undone."""
        path = self.host(rec.path)
        if rec.kind == "file":
            self.uninstall_file(rec.path, rec.a)
        elif rec.kind == "log" and not (os.path.isfile(path) and os.path.getsize(path) > 0):
            self.remove_file(rec.path)
        elif rec.kind == "backup":
            self.restore_backup(rec.path, rec.a, rec.b)
        elif rec.kind == "pending":
            unlink_if(self.host(rec.a))
        elif rec.kind == "edited":
            warn(f"the edited version of {rec.path} install kept stays at {rec.a}")
        elif rec.kind == "mode" and is_dir(path):
            self.step(undo=[("set-mode", path, *mode_owner(path))])
            set_mode_owner(path, rec.a, rec.b)
        elif rec.kind == "reload":
            self.changed = True
        elif rec.kind not in ("log", "mode"):
            warn(f"{txnstore.DB_NAME}: unknown record {rec.kind}: skipped")

    def remove_runtime_files(self) -> None:
        """What the part's programs wrote while running (runtime_files.TABLE), newest first; undelivered
        messages go with the service (counted). The part's runtime record goes after them."""
        dropped = 0
        for kind, pattern in runtime_files.TABLE[self.part][::-1]:
            for path in glob.glob(glob.escape(self.root) + pattern):
                if not (os.path.isfile(path) or os.path.islink(path)):
                    continue
                if kind == "message":
                    dropped += undelivered(path)
                self.remove_file(path[len(self.root) :])
        if dropped:
            warn(f"dropped {dropped} undelivered message(s) from the spool")
        self.step(drop=[r.id for r in self.m.values() if r.kind == "runtime"])

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

    # ---- secret URLs (webhook, heartbeat) --------------------------------------

    def base_installed(self) -> bool:
        return self.store is not None and bool(self.store.records("base"))

    def set_url_file(self, what: str, dest: str) -> bool:
        """The https URL on stdin to DEST as a curl config line, root 0600, recorded in base's manifest;
        only inside /etc/hostguard (fixed temp name there, then a rename; never copied elsewhere, even
        for undo). With --verify that temp file is the candidate the connectivity test goes to first
        (rotation.py). False when DEST already held exactly that URL."""
        url, extras = read_url(sys.stdin.buffer.read(1 << 16), what)
        if not url.isascii() or not re.match(URL_RE, url) or "\n" in url:
            raise die(f"set-{what}: refused: the {what} must be one https:// URL: a host name or [IPv6] address,"
                      " an optional port, path and query of RFC 3986 characters; no fragment (#), quote, space,"
                      " { } [ ] | ^ ` < > or control character (value not shown)")  # fmt: skip
        if what == "webhook":
            check_format(url, extras)
        if not os.path.isdir(self.host(paths.CONF_PATH)) or not self.base_installed():
            raise die(f"set-{what}: {self.host(paths.CONF_PATH)} missing; run install --part base first")
        self.root_dir(paths.CONF_PATH)
        line = f'url = "{url}"\n{extras}'.encode()
        path = self.host(dest)
        if is_file(path) and mode_owner(path) == ("600", "0:0"):
            with open(path, "rb") as f:
                if f.read() == line:
                    log.info(f"{what} unchanged")
                    return False
        tmp = temp_beside(path)
        write_new(tmp, line, 0o600)
        if self.verify:
            try:
                rotation.accepted(rotation.post_test(f"{self.bundle}/hostguard-notify", self.root), is_file(path))
            except BaseException:
                unlink_if(tmp)
                raise
        self.load("base")
        if not any(self.find(k, dest) for k in ("file", "backup", "log")):
            self.step(add=[("file", dest, "-", "")])
        os.replace(tmp, path)
        log.info(f"{what} written to {dest}")
        return True

    def remove_heartbeat(self) -> None:
        if not self.base_installed():
            return
        self.root_dir(paths.CONF_PATH)
        unlink_if(self.host(paths.HEARTBEAT_PATH))
        self.load("base")
        rec = self.find("file", paths.HEARTBEAT_PATH)
        self.step(drop=[rec.id] if rec else [])
        log.info(f"heartbeat removed: {paths.HEARTBEAT_PATH}")

    # ---- commands ------------------------------------------------------------

    def run(self) -> None:
        commands = {"list": self.list_table, "install": self.install, "uninstall": self.uninstall,
                    "set-webhook": self.set_webhook, "set-heartbeat": self.set_heartbeat}  # fmt: skip
        commands[self.command]()

    def install(self) -> None:
        self.need_root()
        self.load_settings()
        self.check_programs()
        self.lock()
        self.recover()
        self.preflight()
        for part in self.parts:
            self.install_part(part)
        log.info(f"install done (root {self.root or '/'})")

    def uninstall(self) -> None:
        self.need_root()
        self.lock()
        self.recover()
        for part in self.parts[::-1]:
            self.uninstall_part(part)
        self.drop_store()  # a run killed after its last part's records went and before the store did

    def set_webhook(self) -> None:
        self.need_root()
        self.lock()
        self.recover()
        if self.set_url_file("webhook", paths.WEBHOOK_PATH):
            services.reload_if_running(self.root)  # a running fail2ban's action reads the new file

    def set_heartbeat(self) -> None:
        self.need_root()
        self.lock()
        self.recover()
        self.remove_heartbeat() if self.remove else self.set_url_file("heartbeat", paths.HEARTBEAT_PATH)

    def need_root(self) -> None:
        if os.geteuid() != 0:
            raise die("install must run as root")

    def list_table(self) -> None:
        for part in self.parts:
            for src, dest, mode in self.part_files(part):
                print(f"{part}|{src}|{dest}|0{mode:o}")

    def finish(self) -> None:
        """The end of every run: no store open, no work dir; a run that recorded nothing leaves the state
        directory's mtime as it found it."""
        self.close_store()
        self.close_work()
        state = self.host(STATE)
        if self.state_mtime and not self.written and os.path.isdir(state):
            os.utime(state, ns=(os.stat(state).st_atime_ns, self.state_mtime))


def parse_args(argv: list[str]) -> Installer:
    if not argv:
        raise Usage
    command, rest, opts, remove, verify = argv[0], argv[1:], {}, False, False
    while rest:
        arg = rest.pop(0)
        if arg in ("--part", "--root", "--settings") and rest:
            opts[arg] = rest.pop(0)
        elif arg == "--remove":
            remove = True
        elif arg == "--verify":
            verify = True
        else:
            raise Usage
    root = opts.get("--root", os.environ.get("HOSTGUARD_ROOT") or "/")
    if not root.startswith("/"):
        raise HostguardError("--root must be an absolute path", EX_USAGE)
    if not os.path.isdir(root):
        raise HostguardError(f"--root {root} is not a directory", EX_USAGE)
    root = os.path.realpath(root).rstrip("/")
    part, settings = opts.get("--part", ""), opts.get("--settings", "")
    if part and part not in PARTS:
        raise HostguardError(f"unknown part {part}", EX_USAGE)
    if command not in ("install", "uninstall", "list", "set-webhook", "set-heartbeat"):
        raise Usage
    if (command.startswith("set-") and (part or settings)) or (remove and command != "set-heartbeat"):
        raise Usage
    if verify and command != "set-webhook":
        raise Usage
    if settings and command != "install":
        raise Usage
    return Installer(command, part, root, settings, remove, verify)


def _interrupted(signum: int, _frame: FrameType | None) -> None:
    raise HostguardError(f"stopped by signal {signum}")


def main(argv: list[str]) -> int:
    os.umask(0o077)
    try:
        inst = parse_args(argv)
    except Usage:
        sys.stderr.write(USAGE)
        return EX_USAGE
    except HostguardError as exc:
        sys.stderr.write(log.die_line(str(exc)) + "\n")
        return exc.code
    paths.ROOT = inst.root
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _interrupted)
    code = 0
    try:
        inst.run()
    except HostguardError as exc:
        sys.stderr.write(log.die_line(str(exc)) + "\n")
        code = exc.code
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        sys.stderr.write(log.die_line(f"{exc.strerror or exc}{where}") + "\n")
        code = 1
    except Exception as exc:  # any failure rolls the part back, named
        sys.stderr.write(log.die_line(f"{type(exc).__name__}: {exc}") + "\n")
        code = 1
    try:
        if code and inst.active:
            inst.rollback()
            sys.stderr.write("hostguard: failed; the changes of this part were rolled back\n")
    finally:
        inst.finish()
    return code
