"""The monitors' run lock (hostguard/runlock.py): one run at a time, and a run held too long is stuck."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from hostguard import runlock, settings


def conf(*lines: str) -> settings.Settings:
    return settings.parse("".join(line + "\n" for line in lines), "t.conf")


def test_stuck_after_is_the_longest_run_and_a_minute() -> None:
    assert runlock.stuck_after(conf("CONTAINER_RUNTIME_TIMEOUT=60", "NOTIFY_BUDGET=40")) == 3 * 65 + 40 + 60


def test_a_lock_is_stuck_only_when_held_longer_than_any_run(tmp_path: Path) -> None:
    lock = tmp_path / "container-monitor.lock"
    s = conf()
    assert runlock.lock_stuck(str(lock), s) is None
    lock.touch()
    old = int(time.time()) - runlock.stuck_after(s) - 5
    os.utime(lock, (old, old))
    # Not held: a run that ended long ago.
    assert runlock.lock_stuck(str(lock), s) is None
    with open(lock, "a") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert runlock.lock_stuck(str(lock), s) == old
        os.utime(lock)
        # Held by a run that started now: running, not stuck.
        assert runlock.lock_stuck(str(lock), s) is None


def test_a_run_takes_the_lock_once_and_stamps_its_start(tmp_path: Path) -> None:
    lock = str(tmp_path / "state" / "host-monitor.lock")
    fd = runlock.take(lock)
    assert fd is not None
    try:
        assert abs(os.stat(lock).st_mtime - time.time()) < 60
        assert (os.stat(lock).st_mode & 0o777) == 0o600
        # Another run (another descriptor) finds it held.
        assert runlock.take(lock) is None
    finally:
        os.close(fd)
    again = runlock.take(lock)
    assert again is not None
    os.close(again)
