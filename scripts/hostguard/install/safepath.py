"""Who may write a path, found by descriptor: no privileged step through a path someone else controls.

A directory is root's when root owns it and nobody else may write to it; a
directory another user owns (and only that user may write to) is that user's,
and so is everything under it. The walk goes component by component with
`openat`-style calls (`dir_fd`, `O_NOFOLLOW | O_NONBLOCK`, `fstat` of what was
opened), so a swap between a check and a use changes nothing: the checks are
made on the descriptor the next step uses. Root follows a symbolic link only
where only root could have made it; a group- or world-writable directory, a
symlink in a user's directory, a file of another user there, or a directory of
a uid without an account is refused, naming the path. The root prefix (--root)
is trusted.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass

from ..errors import HostguardError

TMP_PREFIX = ".hostguard-tmp."
# The most bytes root reads from one file a user may control.
READ_MAX = 4 * 1024 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_MAX_HOPS = 40


@dataclass
class Target:
    """An existing regular file resolved for an edit; `dir_fd` is its directory, as checked."""

    label: str
    real: str
    dir_fd: int
    name: str
    uid: int
    gid: int
    file_uid: int
    file_gid: int
    mode: int
    size: int

    def close(self) -> None:
        os.close(self.dir_fd)


def _account_gid(label: str, path: str, uid: int) -> int:
    """The primary group of UID in the password database; a uid without an account is refused."""
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        raise HostguardError(
            f"{label}: {path} belongs to uid {uid}, which has no account in the password database: refused"
            " (a user's file is edited with that user's own groups only)"
        ) from None


def _owner_only(label: str, path: str, mode: int) -> None:
    if mode & 0o022:
        prefix = f"{label}: " if label else ""
        raise HostguardError(
            f"{prefix}{path} is writable by a group or by all users: refused (make it writable by its owner only)"
        )


def _split(path: str) -> list[str]:
    return [c for c in path.split("/") if c not in ("", ".")]


def resolve(label: str, path: str, root: str) -> Target:
    """The regular file at host PATH (under ROOT) for an edit, or HostguardError naming what is wrong."""
    if not path.startswith("/"):
        raise HostguardError(f"{label}: {path} is not an absolute path")
    fds = [os.open(root or "/", _DIR_FLAGS)]
    names: list[str] = []
    todo = _split(path)
    controller = 0
    gid = 0
    hops = 0
    try:
        while todo:
            comp = todo.pop(0)
            if comp == "..":
                if names:
                    names.pop()
                    os.close(fds.pop())
                continue
            nxt = "/" + "/".join([*names, comp])
            try:
                st = os.stat(comp, dir_fd=fds[-1], follow_symlinks=False)
            except FileNotFoundError:
                raise HostguardError(f"{label}: {path} is not a file under the root ({nxt} is missing)") from None
            if stat.S_ISLNK(st.st_mode):
                if controller:
                    raise HostguardError(
                        f"{label}: {nxt} is a symbolic link in a directory of uid {controller}: refused"
                        " (root follows links only in root's directories)"
                    )
                hops += 1
                if hops > _MAX_HOPS:
                    raise HostguardError(f"{label}: {path}: too many symbolic links")
                target = os.readlink(comp, dir_fd=fds[-1])
                if target.startswith("/"):
                    for fd in fds[1:]:
                        os.close(fd)
                    del fds[1:]
                    names.clear()
                todo[:0] = _split(target)
                continue
            if todo:
                if not stat.S_ISDIR(st.st_mode):
                    raise HostguardError(f"{label}: {nxt} is not a directory")
                fd = os.open(comp, _DIR_FLAGS, dir_fd=fds[-1])
                fds.append(fd)
                names.append(comp)
                # Checked on what was opened: a swap since the stat above is what we check.
                st = os.fstat(fd)
                _owner_only(label, nxt, st.st_mode)
                if st.st_uid != 0:
                    if controller not in (0, st.st_uid):
                        raise HostguardError(
                            f"{label}: {nxt} belongs to uid {st.st_uid} under a directory of uid {controller}: refused"
                        )
                    if controller != st.st_uid:
                        gid = _account_gid(label, nxt, st.st_uid)
                    controller = st.st_uid
                continue
            if not stat.S_ISREG(st.st_mode):
                raise HostguardError(f"{label}: {nxt} is not a regular file")
            if controller and st.st_uid != controller:
                raise HostguardError(
                    f"{label}: {nxt} belongs to uid {st.st_uid} but its directory to uid {controller}: refused"
                )
            if st.st_size > READ_MAX:
                raise HostguardError(
                    f"{label}: {nxt} is {st.st_size} bytes, over the limit of {READ_MAX} bytes root reads from such"
                    " a file: refused"
                )
            dir_fd = fds.pop()
            return Target(
                label, nxt, dir_fd, comp, controller, gid if controller else 0,
                st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_size,
            )  # fmt: skip
        raise HostguardError(f"{label}: {path} is not a file")
    finally:
        for fd in fds:
            os.close(fd)


def root_dir(path: str, root: str) -> None:
    """Refuses unless every existing directory on host PATH is root's, writable by root only, and no link."""
    fd = os.open(root or "/", _DIR_FLAGS)
    cur = ""
    try:
        for comp in _split(path):
            cur += "/" + comp
            try:
                st = os.stat(comp, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return
            if not stat.S_ISDIR(st.st_mode):
                kind = "symbolic link" if stat.S_ISLNK(st.st_mode) else "file"
                raise HostguardError(f"{cur} is not a directory (a {kind}): refused")
            nfd = os.open(comp, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nfd
            st = os.fstat(fd)
            if st.st_uid != 0:
                raise HostguardError(f"{cur} belongs to uid {st.st_uid}, not root: refused")
            _owner_only("", cur, st.st_mode)
    finally:
        os.close(fd)
