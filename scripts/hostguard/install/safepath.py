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
from dataclasses import dataclass, field

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


@dataclass
class _Walk:
    """A resolve's state: the directories open (the root's first) and their names, the components left, the
    uid that controls what is under the current directory (0: root) and its group, the links followed."""

    label: str
    path: str
    fds: list[int]
    todo: list[str]
    names: list[str] = field(default_factory=list)
    controller: int = 0
    gid: int = 0
    hops: int = 0

    def up(self) -> None:
        if self.names:
            self.names.pop()
            os.close(self.fds.pop())

    def follow(self, comp: str, nxt: str) -> None:
        if self.controller:
            raise HostguardError(
                f"{self.label}: {nxt} is a symbolic link in a directory of uid {self.controller}: refused"
                " (root follows links only in root's directories)"
            )
        self.hops += 1
        if self.hops > _MAX_HOPS:
            raise HostguardError(f"{self.label}: {self.path}: too many symbolic links")
        target = os.readlink(comp, dir_fd=self.fds[-1])
        if target.startswith("/"):
            for fd in self.fds[1:]:
                os.close(fd)
            del self.fds[1:]
            self.names.clear()
        self.todo[:0] = _split(target)

    def enter(self, comp: str, nxt: str, st: os.stat_result) -> None:
        if not stat.S_ISDIR(st.st_mode):
            raise HostguardError(f"{self.label}: {nxt} is not a directory")
        fd = os.open(comp, _DIR_FLAGS, dir_fd=self.fds[-1])
        self.fds.append(fd)
        self.names.append(comp)
        # Checked on what was opened: a swap since the stat before is what we check.
        st = os.fstat(fd)
        _owner_only(self.label, nxt, st.st_mode)
        if st.st_uid != 0:
            if self.controller not in (0, st.st_uid):
                raise HostguardError(
                    f"{self.label}: {nxt} belongs to uid {st.st_uid} under a directory of uid {self.controller}:"
                    " refused"
                )
            if self.controller != st.st_uid:
                self.gid = _account_gid(self.label, nxt, st.st_uid)
            self.controller = st.st_uid

    def target(self, comp: str, nxt: str, st: os.stat_result) -> Target:
        if not stat.S_ISREG(st.st_mode):
            raise HostguardError(f"{self.label}: {nxt} is not a regular file")
        if self.controller and st.st_uid != self.controller:
            raise HostguardError(
                f"{self.label}: {nxt} belongs to uid {st.st_uid} but its directory to uid {self.controller}: refused"
            )
        if st.st_size > READ_MAX:
            raise HostguardError(
                f"{self.label}: {nxt} is {st.st_size} bytes, over the limit of {READ_MAX} bytes root reads from such"
                " a file: refused"
            )
        dir_fd = self.fds.pop()
        return Target(
            self.label, nxt, dir_fd, comp, self.controller, self.gid if self.controller else 0,
            st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_size,
        )  # fmt: skip


def resolve(label: str, path: str, root: str) -> Target:
    """The regular file at host PATH (under ROOT) for an edit, or HostguardError naming what is wrong."""
    if not path.startswith("/"):
        raise HostguardError(f"{label}: {path} is not an absolute path")
    walk = _Walk(label, path, [os.open(root or "/", _DIR_FLAGS)], _split(path))
    try:
        while walk.todo:
            comp = walk.todo.pop(0)
            if comp == "..":
                walk.up()
                continue
            nxt = "/" + "/".join([*walk.names, comp])
            try:
                st = os.stat(comp, dir_fd=walk.fds[-1], follow_symlinks=False)
            except FileNotFoundError:
                raise HostguardError(f"{label}: {path} is not a file under the root ({nxt} is missing)") from None
            if stat.S_ISLNK(st.st_mode):
                walk.follow(comp, nxt)
            elif walk.todo:
                walk.enter(comp, nxt, st)
            else:
                return walk.target(comp, nxt, st)
        raise HostguardError(f"{label}: {path} is not a file")
    finally:
        for fd in walk.fds:
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
