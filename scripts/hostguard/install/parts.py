"""One part installed or uninstalled, as its named steps, in one transaction (txn.py)."""

from __future__ import annotations

import glob
import os
import sqlite3
import urllib.parse

from .. import log, paths, runtime_files
from ..errors import HostguardError
from ..settings import Settings
from . import payload, reloads, sshjournal, webpart
from .bundle import Bundle
from .hostfs import is_dir, is_file, unlink_if
from .txn import STATE, Txn

# Directories each part owns; parents are created 0755 as needed.
DIRS = [("base", paths.LIB_PATH, 0o755), ("base", paths.CONF_PATH, 0o700), ("base", STATE, 0o700),
        ("base", paths.SPOOL_PATH, 0o700), ("base", paths.LOG_PATH, 0o755),
        ("monitors", paths.LOG_PATH, 0o755)]  # fmt: skip
MONITOR_LOGS = ("host-monitor", "container-monitor")


def preflight(t: Txn, bundle: Bundle, parts: list[str], s: Settings) -> None:
    """Everything that could fail for a reason other than the disk, before the first write."""
    bundle.table()
    t.root_dir(STATE)
    for part in parts:
        for src, dest, _ in bundle.part_files(part):
            if not os.path.isfile(bundle.source_file(src, dest)):
                raise HostguardError(f"payload file {src} missing beside {bundle.dir}/install")
            t.root_dir(os.path.dirname(dest))
            if is_dir(t.host(dest)):
                raise HostguardError(f"{dest} is a directory: refused")
        for folder in (d for p, d, _ in DIRS if p == part):
            t.root_dir(folder)
        if part == "web":
            webpart.read(t, s, plan=False)
            webpart.check_realip(bundle)


def install_part(t: Txn, bundle: Bundle, s: Settings, part: str) -> None:
    t.begin(part)
    drop_pending_backups(t)
    t.changed = t.find("reload", "pending") is not None  # a run killed after a change, before its reload
    make_dirs(t, part)
    t.step(add=[("runtime", part, "", "")])  # its programs write files while running (runtime_files.TABLE)
    skip = webpart.not_wanted(t, bundle, part)
    place_files(t, bundle, part, skip)
    if part == "bantool":
        place_ssh_journal(t)
    remove_dropped(t, bundle, part, skip)
    if part == "monitors":
        make_monitor_logs(t, s)
    if part == "web":
        webpart.converge(t, s)
    reloads.apply(t, part)
    reload = t.find("reload", "pending")
    t.step(drop=[reload.id] if reload else [])
    t.commit()
    t.close_work()


def uninstall_part(t: Txn, part: str) -> None:
    if not t.installed(part):
        log.info(f"part {part}: nothing installed")
        return
    t.begin(part)
    webpart.undo(t, t.records(*webpart.KINDS))  # users' files first: their records are the part's newest
    undo_records(t)
    remove_runtime_files(t)
    reloads.apply(t, part, undoing=True)
    t.commit()
    remove_dirs(t)
    t.close_work()
    t.drop_store()
    log.info(f"part {part} uninstalled")


def drop_pending_backups(t: Txn) -> None:
    """A backup pending (a crash between recording and copying): the original is still in place."""
    for rec in t.records("pending")[::-1]:
        unlink_if(t.host(rec.a))
        t.step(drop=[rec.id])


def make_dirs(t: Txn, part: str) -> None:
    for folder, mode in ((d, m) for p, d, m in DIRS if p == part):
        payload.ensure_dir(t, folder, mode)


def place_files(t: Txn, bundle: Bundle, part: str, skip: set[str]) -> None:
    for src, dest, mode in bundle.part_files(part):
        if dest not in skip:
            with open(bundle.source_file(src, dest), "rb") as f:
                payload.install_file(t, f.read(), dest, mode)


def place_ssh_journal(t: Txn) -> None:
    """fail2ban's sshd jail on the journal where the host needs it; kept once placed, until uninstall."""
    if t.find("file", sshjournal.DROPIN) or sshjournal.needed(t.root):
        payload.install_file(t, sshjournal.CONTENT, sshjournal.DROPIN, 0o644)


def remove_dropped(t: Txn, bundle: Bundle, part: str, skip: set[str]) -> None:
    """Files an earlier install of PART placed that its table no longer lists (or lists in SKIP): undone as
    uninstall does (a URL file set-webhook wrote, kept without a hash, is no row and stays)."""
    listed = {dest for _, dest, _ in bundle.part_files(part)} | ({sshjournal.DROPIN} if part == "bantool" else set())
    listed -= skip
    for rec in list(t.m.values())[::-1]:
        if rec.path in listed or rec.kind not in ("file", "backup") or (rec.kind, rec.a) == ("file", "-"):
            continue
        if rec.kind == "file":
            payload.uninstall_file(t, rec.path, rec.a)
        else:
            payload.restore_backup(t, rec.path, rec.a, rec.b)
        t.step(drop=[rec.id])


def make_monitor_logs(t: Txn, s: Settings) -> None:
    """Logs exist before cron's first append (0640, not cron's umask); uninstall removes them while empty."""
    for name in MONITOR_LOGS:
        dest = f"{paths.LOG_PATH}/{name}.log"
        if name == "container-monitor" and not s.container_monitor:
            # Not scheduled any more: the empty log an earlier install made goes, as uninstall takes it.
            rec = t.find("log", dest)
            if rec is not None and not (is_file(t.host(dest)) and os.path.getsize(t.host(dest))):
                payload.remove_file(t, dest)
                t.step(drop=[rec.id])
            continue
        if os.path.lexists(t.host(dest)):
            continue
        t.step(add=[("log", dest, "", "")], undo=[("put-back", t.host(dest), "", "")])
        # Created 0640 at once: a run killed before a chmod would leave a 0600 log the next run keeps.
        old = os.umask(0o137)
        try:
            fd = os.open(t.host(dest), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
        finally:
            os.umask(old)
        os.fchown(fd, 0, 0)
        os.close(fd)


def undo_records(t: Txn) -> None:
    """Newest first; each record goes once undone, so a run killed midway leaves exactly what is left to undo."""
    for rec in list(t.m.values())[::-1]:
        if rec.kind not in ("dir", "runtime"):
            payload.undo_record(t, rec)
            t.step(drop=[rec.id])


def remove_runtime_files(t: Txn) -> None:
    """What the part's programs wrote while running (runtime_files.TABLE), newest first; undelivered
    messages go with the service (counted). The part's runtime record goes after them."""
    dropped = 0
    for kind, pattern in runtime_files.TABLE[t.part][::-1]:
        for path in glob.glob(glob.escape(t.root) + pattern):
            if not (os.path.isfile(path) or os.path.islink(path)):
                continue
            if kind == "message":
                dropped += undelivered(path)
            payload.remove_file(t, path[len(t.root) :])
    if dropped:
        log.log("WARN", f"dropped {dropped} undelivered message(s) from the spool")
    t.step(drop=[r.id for r in t.records("runtime")])


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


def remove_dirs(t: Txn) -> None:
    """The part's directories, deepest first, when empty."""
    for rec in t.records("dir")[::-1]:
        path = t.host(rec.path)
        if is_dir(path) and os.listdir(path):
            log.info(f"kept {rec.path}: not empty")
        elif is_dir(path):
            os.rmdir(path)
        t.step(drop=[rec.id])
