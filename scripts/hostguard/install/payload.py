"""The payload's files on the host: placed root's with their table mode (what was there kept first), and
taken out again, an admin's edit left in place and a user's own file put back."""

from __future__ import annotations

import errno
import glob
import hashlib
import os
import time

from .. import log
from ..atomicfile import write_new
from ..errors import HostguardError
from . import txnstore
from .hostfs import (
    copy_a,
    holds,
    is_dir,
    is_file,
    mode_owner,
    same,
    set_mode_owner,
    sha256_file,
    temp_beside,
    unlink_if,
)
from .txn import BACKUP_DIR, EDITED_DIR, Row, Txn
from .txnstore import Rec


def ensure_dir(t: Txn, folder: str, mode: int | None = None) -> None:
    """Creates FOLDER (parents 0755), recording each directory first; with MODE (hostguard's own
    directories) also sets it and root ownership, remembering an old mode for uninstall."""
    t.root_dir(folder)
    cur = ""
    for comp in folder.strip("/").split("/"):
        cur += "/" + comp
        if os.path.isdir(t.host(cur)):
            continue
        t.step(add=[("dir", cur, "", "")], undo=[("remove-dir", t.host(cur), "", "")])
        os.mkdir(t.host(cur), 0o755)
        os.chmod(t.host(cur), 0o755)  # noqa: S103 - parents of hostguard's directories, root's
        os.chown(t.host(cur), 0, 0)
    old = mode_owner(t.host(folder))
    if mode is not None and old != (f"{mode:o}", "0:0"):
        fresh = not t.find("dir", folder) and not t.find("mode", folder)
        t.step(add=[("mode", folder, *old)] if fresh else [], undo=[("set-mode", t.host(folder), *old)])
        os.chown(t.host(folder), 0, 0)
        os.chmod(t.host(folder), mode)


def write(t: Txn, content: bytes, dest: str, mode: int, add: list[Row], put: list[Rec]) -> None:
    """Fixed temp name beside DEST, owner and mode set, then renamed: readers see the old file or the new.
    ADD and PUT, the records of the write, go in the step that journals it."""
    path = t.host(dest)
    tmp = temp_beside(path)
    t.step(add=add, put=put, undo=[t.save(path), ("put-back", tmp, "", "")])
    write_new(tmp, content, mode)
    os.replace(tmp, path)


def unedited(t: Txn, dest: str, hashes: str) -> bool:
    """A regular file whose sha256 is in HASHES ("-" or empty: not kept, always unedited)."""
    if hashes in ("", "-"):
        return True
    path = t.host(dest)
    return is_file(path) and sha256_file(path) in hashes.split(",")


def keep_copy(t: Txn, folder: str, kind: str, dest: str, tag: str = "") -> str:
    """Host path DEST copied (file or dangling link) into FOLDER (made 0700, shared by the parts, removed
    by uninstall once empty), recorded first as KIND; the copy's path."""
    name = hashlib.sha256(dest.encode("utf-8", "surrogateescape")).hexdigest()
    copy = f"{folder}/{name}{'.' + tag if tag else ''}"
    if not os.path.isdir(t.host(folder)):
        t.step(undo=[("remove-dir", t.host(folder), "", "")])
        os.mkdir(t.host(folder), 0o700)
    to = t.host(copy)
    t.step(add=[(kind, dest, copy, "")], undo=[t.save(to), ("put-back", temp_beside(to), "", "")])
    unlink_if(temp_beside(to))
    copy_a(t.host(dest), temp_beside(to))
    os.replace(temp_beside(to), to)
    return copy


def install_file(t: Txn, content: bytes, dest: str, mode: int) -> None:
    """CONTENT at DEST with MODE, root's; unchanged: nothing written. What was there is kept first: a
    user's own file (or symlink) as a backup uninstall puts back, an admin's edit as a copy it names."""
    ensure_dir(t, os.path.dirname(dest))
    path = t.host(dest)
    if is_dir(path):
        raise HostguardError(f"{dest} is a directory: refused")
    if holds(path, content, f"{mode:o}"):
        return
    want = hashlib.sha256(content).hexdigest()
    rec = t.find("file", dest) or t.find("backup", dest)
    add: list[Row] = [("reload", "pending", "", "")]
    put: list[Rec] = []
    if rec is not None:
        put = [rehash(t, rec, dest, want)]
    elif os.path.lexists(path):
        # A user's own file: recorded as pending, copied, then recorded as the backup.
        copy = keep_copy(t, BACKUP_DIR, "pending", dest)
        pending = t.find("pending", dest)
        assert pending is not None
        t.step(put=[Rec(pending.id, "backup", dest, copy, want)])
    else:
        add.insert(0, ("file", dest, want, ""))
    t.changed = True
    write(t, content, dest, mode, add, put)
    log.info(f"installed {dest}")


def rehash(t: Txn, rec: Rec, dest: str, want: str) -> Rec:
    """REC (file or backup of DEST) with WANT as its newest hash; an admin's edit of DEST kept first."""
    copy, hashes = (rec.a, rec.b) if rec.kind == "backup" else ("", rec.a)
    path = t.host(dest)
    # Neither what install wrote nor (a run killed before its write) the original it kept.
    if os.path.lexists(path) and not unedited(t, dest, hashes) and not (copy and same(path, t.host(copy))):
        copy_at = keep_copy(t, EDITED_DIR, "edited", dest, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
        log.log("WARN", f"{dest} was edited since install: your version is kept at {copy_at}")
    # The new hash first, the previous one kept: a run killed between this record and the
    # write leaves a file that is still "not edited".
    if want not in hashes.split(","):
        hashes = want + ("," + hashes.split(",")[0] if hashes else "")
    return rec._replace(b=hashes) if copy else rec._replace(a=hashes)


def remove_file(t: Txn, dest: str) -> None:
    """Removes DEST (and a temp file a killed run left beside it)."""
    t.root_dir(os.path.dirname(dest))
    path = t.host(dest)
    unlink_if(temp_beside(path))
    if not os.path.lexists(path):
        return
    t.step(undo=[t.save(path)])
    os.unlink(path)
    t.changed = True
    log.info(f"removed {dest}")


def uninstall_file(t: Txn, dest: str, hashes: str) -> None:
    if os.path.lexists(t.host(dest)) and not unedited(t, dest, hashes):
        log.log("WARN", f"{dest} was edited since install: left in place")
        return
    remove_file(t, dest)
    cache = t.host(f"{os.path.dirname(dest)}/__pycache__")
    if dest.endswith(".py") and is_dir(cache):
        # The bytecode Python wrote for it goes with it (and the temp file of a write a kill cut
        # short: `NAME.TAG.pyc.<digits>`); the folder when empty.
        t.root_dir(cache[len(t.root) :])
        stem = f"{glob.escape(cache)}/{glob.escape(os.path.basename(dest)[:-3])}"
        for pyc in glob.glob(f"{stem}.*.pyc") + glob.glob(f"{stem}.*.pyc.[0-9]*"):
            if is_file(pyc):
                os.unlink(pyc)
        if not os.listdir(cache):
            os.rmdir(cache)


def restore_backup(t: Txn, dest: str, copy: str, hashes: str) -> None:
    """A user's file install replaced: put back unless the installed one was edited since."""
    path, kept = t.host(dest), t.host(copy)
    if not os.path.lexists(kept):
        log.log("WARN", f"backup of {dest} is missing: left as it is")
        return
    if os.path.lexists(path) and not unedited(t, dest, hashes) and not same(path, kept):
        log.log("WARN", f"{dest} was edited since install: left in place; the original is kept at {copy}")
        return
    t.root_dir(os.path.dirname(dest))
    tmp = temp_beside(path)
    unlink_if(tmp)
    t.step(undo=[t.save(path), t.save(kept), ("put-back", tmp, "", "")])
    try:
        os.replace(kept, path)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        # Another filesystem (a bind mount): a copy beside it, renamed over it, then the backup goes.
        copy_a(kept, tmp)
        os.replace(tmp, path)
        os.unlink(kept)
    t.changed = True
    log.info(f"restored {dest}")


def undo_record(t: Txn, rec: Rec) -> None:
    """What install did for one record of the manifest, undone."""
    path = t.host(rec.path)
    if rec.kind == "file":
        uninstall_file(t, rec.path, rec.a)
    elif rec.kind == "log" and not (os.path.isfile(path) and os.path.getsize(path) > 0):
        remove_file(t, rec.path)
    elif rec.kind == "backup":
        restore_backup(t, rec.path, rec.a, rec.b)
    elif rec.kind == "pending":
        unlink_if(t.host(rec.a))
    elif rec.kind == "edited":
        log.log("WARN", f"the edited version of {rec.path} install kept stays at {rec.a}")
    elif rec.kind == "mode" and is_dir(path):
        t.step(undo=[("set-mode", path, *mode_owner(path))])
        set_mode_owner(path, rec.a, rec.b)
    elif rec.kind == "reload":
        t.changed = True
    elif rec.kind not in ("log", "mode"):
        log.log("WARN", f"{txnstore.DB_NAME}: unknown record {rec.kind}: skipped")
