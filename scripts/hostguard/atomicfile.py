"""Root-owned files: replaced whole, written fresh, and locked within a deadline. It imports
nothing of hostguard, so the spool, the alert state, the ban list and the installer use it."""

import fcntl
import os
import time


def tmp_path(path: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.tmp")


def write_all(fd: int, data: bytes) -> None:
    """DATA to FD whatever short writes the kernel makes, then on the disk (fsync)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def write_new(path: str, data: bytes, mode: int) -> None:
    """DATA in a fresh file PATH (one left there replaced), root's, MODE, on the disk before the caller
    renames it: a file recorded as placed is never empty under its name after a power loss."""
    if os.path.lexists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchown(fd, 0, 0)
        os.fchmod(fd, mode)
        write_all(fd, data)
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes, tmp: "str | None" = None) -> None:
    """Replaces PATH with DATA through a 0600 temp file (TMP, default
    tmp_path(PATH)), fsync, rename, directory fsync: a crash leaves the old
    file or the new one."""
    tmp = tmp if tmp is not None else tmp_path(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        # A temp file we made goes; anything else in its way (a directory) stays.
        if os.path.isfile(tmp) and not os.path.islink(tmp):
            os.unlink(tmp)
        raise
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def lock_within(fd: int, wait: float, step: float) -> bool:
    """An exclusive flock on FD, tried every STEP seconds for at most WAIT (flock has no timed wait)."""
    give_up = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= give_up:
                return False
        time.sleep(step)
