"""A user's file read and written with that user's rights only, within one deadline per install.

A file under a directory a user controls is read and replaced by a forked child that dropped to that user
(setgroups to the user's groups, setgid to its primary group, setuid), working from the directory
descriptor root checked (safepath.resolve); root waits on the child's pipe with the install's one
deadline, never longer. A file in root's own directory is read and replaced by root, by descriptor.
A write goes through a fixed temp name beside the file; a run killed mid-write leaves it, and the next run
removes it the same way (drop_temp, for each user's file the dead run's journal names: txn.recover).
`Budget` bounds one install in total seconds and bytes read; over either the part is refused naming the
file and the bound.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import select
import signal
import stat
import time
from collections.abc import Callable
from typing import NoReturn

from ..atomicfile import close_all_but
from ..errors import HostguardError
from .safepath import READ_MAX, TMP_PREFIX, Target

# Total bytes root reads from users' files in one install (every nginx file and
# the properties file together), and the seconds all of it may take.
TOTAL_BYTES = 16 * 1024 * 1024
TOTAL_SECONDS = 60.0
_CHUNK = 65536
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Budget:
    """What is left of the install's bounds: an absolute deadline (wall clock) and bytes."""

    def __init__(self, deadline: float, total: int = TOTAL_BYTES) -> None:
        self.deadline = deadline
        self.left = total
        self.total = total

    def remaining(self, target: Target) -> float:
        left = self.deadline - time.time()
        if left <= 0:
            raise HostguardError(
                f"{target.label}: {target.real}: the install's bound of {TOTAL_SECONDS:.0f} s for reading and writing"
                " users' files is spent: refused"
            )
        return left

    def take(self, target: Target, size: int) -> None:
        if size > self.left:
            raise HostguardError(
                f"{target.label}: {target.real}: over the bound of {self.total} bytes root reads from users' files"
                " in one install: refused"
            )
        self.left -= size


def _read_fd(fd: int, target: Target) -> bytes:
    """The regular file at FD (checked with fstat), at most READ_MAX bytes."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise HostguardError(f"{target.label}: {target.real} is not a regular file")
    chunks: list[bytes] = []
    size = 0
    while size <= READ_MAX:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _write_in_dir(target: Target, data: bytes, owner: tuple[int, int]) -> None:
    """Temp file beside the target (fixed name), fsync, rename over it, fsync of the directory."""
    tmp = TMP_PREFIX + target.name
    d = target.dir_fd
    _unlink(tmp, d)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=d)
    try:
        try:
            _send(fd, data)
            # A user may not give the file a group it is not in: it keeps the user's own then.
            with contextlib.suppress(PermissionError):
                os.fchown(fd, *owner)
            os.fchmod(fd, target.mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target.name, src_dir_fd=d, dst_dir_fd=d)
    except BaseException:
        # A failed write leaves nothing beside the file (a killed run's temp: drop_temp, from txn.recover).
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=d)
        raise
    os.fsync(d)


def _unlink(name: str, dir_fd: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)


def drop_temp(target: Target, budget: Budget) -> None:
    """Removes the temp file beside TARGET (TMP_PREFIX + its name) a write cut short by a kill left, as the
    directory's controller (a child dropped to it, within the budget's deadline); none there: nothing done."""
    tmp, d = TMP_PREFIX + target.name, target.dir_fd
    try:
        os.stat(tmp, dir_fd=d, follow_symlinks=False)
    except FileNotFoundError:
        return
    where = f"{target.label}: {target.real.rsplit('/', 1)[0]}/{tmp}"
    if target.uid == 0:
        try:
            _unlink(tmp, d)
        except OSError as exc:
            raise HostguardError(f"{where} could not be removed ({exc.strerror})") from None
        return
    groups = _groups(target)
    until = time.time() + budget.remaining(target)
    pid = os.fork()
    if pid == 0:
        _child(target, groups, d, lambda: _unlink(tmp, d))
    if _reap(pid, until) != 0:
        raise HostguardError(
            f"{where} could not be removed as uid {target.uid} within the install's bound of {TOTAL_SECONDS:.0f} s"
        )


def _groups(target: Target) -> list[int]:
    """The user's own groups (group database), looked up before the fork."""
    return os.getgrouplist(pwd.getpwuid(target.uid).pw_name, target.gid)


def _child(target: Target, groups: list[int], keep: int, work: Callable[[], None]) -> NoReturn:
    """In the forked child: close all but KEEP and the directory, drop to the user, do WORK; exit 0 or 1."""
    code = 1
    try:
        close_all_but({keep, target.dir_fd})
        os.setgroups(groups)
        os.setgid(target.gid)
        os.setuid(target.uid)
        work()
        code = 0
    except BaseException:  # noqa: S110 - the child reports by its exit status only
        pass
    finally:
        os._exit(code)


def _reap(pid: int, until: float) -> int | None:
    """The child's exit status, waiting until UNTIL at most; None when it did not end (it is then killed)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.time() >= until:
            os.kill(pid, signal.SIGKILL)
            # A traced child's end may never be reported to us: no blocking wait.
            time.sleep(0.01)
            os.waitpid(pid, os.WNOHANG)
            return None
        time.sleep(0.002)


def read(target: Target, budget: Budget) -> bytes:
    """The file's content, read with its controller's rights, within the budget."""
    budget.take(target, target.size)
    if target.uid == 0:
        fd = os.open(target.name, _FILE_FLAGS, dir_fd=target.dir_fd)
        try:
            data = _read_fd(fd, target)
        finally:
            os.close(fd)
    else:
        data = _as_user(target, budget, None)
    if len(data) > READ_MAX:
        raise HostguardError(
            f"{target.label}: {target.real} is over the limit of {READ_MAX} bytes root reads from such a file: refused"
        )
    budget.take(target, max(0, len(data) - target.size))
    return data


def replace(target: Target, data: bytes, budget: Budget) -> None:
    """Replaces the file with DATA (owner and mode kept), written by its controller, within the budget."""
    if target.uid != 0:
        _as_user(target, budget, data)
        return
    try:
        _write_in_dir(target, data, (target.file_uid, target.file_gid))
    except OSError as exc:
        raise HostguardError(f"{target.real}: could not be written ({exc.strerror})") from None


def _as_user(target: Target, budget: Budget, data: bytes | None) -> bytes:
    """The user's side of a read (DATA None: the file's bytes come back through the pipe) or of a replace
    (DATA goes through the pipe to the child, which writes it), in a child dropped to the file's
    controller; root waits on its end of the pipe and on the child with the install's one deadline."""
    groups = _groups(target)
    rfd, wfd = os.pipe()
    until = time.time() + budget.remaining(target)
    pid = os.fork()
    if pid == 0:
        if data is None:
            _child(target, groups, wfd, lambda: _send(wfd, _read_fd(_open(target), target)))
        _child(target, groups, rfd, lambda: _write_in_dir(target, _read_all(rfd), (-1, target.file_gid)))
    os.close(wfd if data is None else rfd)
    out, status = b"", None
    if data is None:
        out, status = _take(rfd, pid, until)
    else:
        fed = _feed(wfd, data, until)
        status = _reap(pid, until)
        status = -1 if status == 0 and not fed else status
    verb = "read" if data is None else "written"
    if status is None:
        raise HostguardError(
            f"{target.label}: {target.real}: {'reading' if data is None else 'writing'} it as uid {target.uid} did"
            f" not end within the install's bound of {TOTAL_SECONDS:.0f} s: refused"
        )
    if status != 0:
        raise HostguardError(
            f"{target.label}: {target.real} could not be {verb} as uid {target.uid} (with that user's own groups):"
            " refused"
        )
    return out


def _open(target: Target) -> int:
    return os.open(target.name, _FILE_FLAGS, dir_fd=target.dir_fd)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _take(rfd: int, pid: int, until: float) -> tuple[bytes, int | None]:
    """What the child sends (at most READ_MAX + 1 bytes) and its exit status (None: killed at UNTIL)."""
    chunks: list[bytes] = []
    size = 0
    status: int | None = None
    eof = False
    try:
        os.set_blocking(rfd, False)
        while size <= READ_MAX and time.time() < until:
            ready, _, _ = select.select([rfd], [], [], max(0.0, min(until - time.time(), 0.05)))
            if ready:
                chunk = os.read(rfd, _CHUNK)
                eof = not chunk
                if eof:
                    break
                chunks.append(chunk)
                size += len(chunk)
                continue
            # The child may have ended while someone holds a copy of its pipe: what it wrote is in.
            done, wstatus = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(wstatus)
                chunks.extend(_drain(rfd, READ_MAX + 1 - size))
                break
    finally:
        os.close(rfd)
    if status is None:
        status = _reap(pid, until if eof else 0.0)
    return b"".join(chunks), status


def _drain(fd: int, most: int) -> list[bytes]:
    out: list[bytes] = []
    while most > 0:
        try:
            chunk = os.read(fd, min(_CHUNK, most))
        except BlockingIOError:
            break
        if not chunk:
            break
        out.append(chunk)
        most -= len(chunk)
    return out


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _feed(fd: int, data: bytes, until: float) -> bool:
    """Writes DATA into the pipe FD by UNTIL at the latest; closes it."""
    view = memoryview(data)
    try:
        os.set_blocking(fd, False)
        while view:
            left = until - time.time()
            if left <= 0:
                return False
            _, ready, _ = select.select([], [fd], [], min(left, 0.05))
            if ready:
                try:
                    view = view[os.write(fd, view[:_CHUNK]) :]
                except BrokenPipeError:
                    return False
        return True
    finally:
        os.close(fd)
