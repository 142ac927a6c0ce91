"""The monitors' run lock: one run at a time per monitor (`<monitor>.lock` in the state directory,
flock), its mtime the start of the run that holds it, so that a run holding it too long is told stuck."""

import contextlib
import fcntl
import os
import time

from . import paths
from .atomicfile import open_lock
from .settings import Settings


def lock_path(monitor: str) -> str:
    return paths.under(f"{paths.STATE_PATH}/{monitor}.lock")


def take(path: str) -> "int | None":
    """The lock PATH held by this run (its descriptor), its mtime now; None when another run holds it."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    # Its mtime says when this run started: how a stuck run is told. No disk space needed.
    with contextlib.suppress(OSError):
        os.utime(fd)
    return fd


def stuck_after(settings: Settings) -> int:
    """Seconds after which a run still holding its lock is stuck: the longest a
    run can take (three runtime calls, each ended by its timeout and a kill 5 s
    later, then a delivery run's budget) and a minute more."""
    return 3 * (settings.container_runtime_timeout + 5) + settings.notify_budget + 60


def lock_stuck(path: str, settings: Settings) -> "int | None":
    """The start (epoch seconds) of a run that holds the lock PATH and is stuck;
    None otherwise. Never pass a lock this process holds (a second descriptor
    would see it held)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            pass
        since = int(os.fstat(fd).st_mtime)
    finally:
        os.close(fd)
    return since if int(time.time()) - since > stuck_after(settings) else None


def stamp(when: int) -> str:
    """A run's start as the log lines and alerts show it (local time)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
