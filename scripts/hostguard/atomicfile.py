"""Root's own files: small ones read whole or rewritten in place, others replaced whole or written
fresh, and locks taken within a deadline. It imports nothing of hostguard, so every part uses it."""

import contextlib
import fcntl
import os
import time


def close_all_but(keep: set[int], lowest: int = 0) -> None:
    """In a forked child: closes every descriptor from LOWEST up but KEEP, as /proc/self/fd lists them
    (closing every possible one is 20,000 system calls where the limit is that high); without /proc, all."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(max(os.sysconf("SC_OPEN_MAX"), 1024)))
    for fd in fds:
        if fd >= lowest and fd not in keep:
            os.closerange(fd, fd + 1)  # ignores the listing's own descriptor, already closed


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


def open_lock(path: str) -> int:
    """A lock file's descriptor (0600, created if missing, no link followed), not yet locked."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def read_text(path: str, most: int = 1 << 16) -> "str | None":
    """A small file's text in one read (the kernel's /proc files come whole;
    /proc/sys zeroes a buffer of the size asked); None when unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    try:
        return os.read(fd, most).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def first_line(path: str, most: int = 1 << 16) -> str:
    """The first line of a small file (at most MOST bytes read), stripped; "" when unreadable."""
    text = read_text(path, most)
    return text.split("\n", 1)[0].strip() if text else ""


def write_small(path: str, text: str) -> bool:
    """Rewrites PATH (0600, no link followed) in place: written, then cut to
    its length (O_TRUNC makes ext4 flush the file on close, a fifth of a
    quiet monitor run). False when it cannot be written."""
    data = text.encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, data)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
