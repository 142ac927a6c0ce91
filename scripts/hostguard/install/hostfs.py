"""The installer's file primitives on host paths: tests that refuse links, copies as `cp -a`, modes as text."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat

from . import safepath

TMP = safepath.TMP_PREFIX


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


def holds(path: str, content: bytes, mode: str) -> bool:
    """PATH is a regular file of root's with MODE (octal text) and exactly CONTENT."""
    if not (is_file(path) and mode_owner(path) == (mode, "0:0")):
        return False
    with open(path, "rb") as f:
        return f.read() == content


def mode_owner(path: str) -> tuple[str, str]:
    st = os.stat(path)
    return f"{stat.S_IMODE(st.st_mode):o}", f"{st.st_uid}:{st.st_gid}"


def set_mode_owner(path: str, mode: str, owner: str) -> None:
    os.chmod(path, int(mode, 8))
    os.chown(path, *map(int, owner.split(":")))


def temp_beside(path: str) -> str:
    return f"{os.path.dirname(path)}/{TMP}{os.path.basename(path)}"
