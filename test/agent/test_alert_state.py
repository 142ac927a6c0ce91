"""The alert policy (hostguard/monitor/alert_state.py): decisions, the state file, and sequences of runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostguard import atomicfile
from hostguard.monitor.alert_state import EVENT, HOLD, LATCH, NONE, POST, RESOLVE, AlertState


def state(path: Path, after: int = 1, repeat: int = 0, resolved: bool = False) -> AlertState:
    loaded = AlertState(str(path), after, repeat, resolved)
    loaded.read()
    return loaded


def run(
    path: Path, key: str, over: bool, once: str = "", *, after: int = 1, repeat: int = 0, resolved: bool = False
) -> str:
    """One monitor run: load, observe KEY, save, as the monitors do."""
    loaded = state(path, after, repeat, resolved)
    action = loaded.observe(key, over, once)
    assert loaded.save()
    return action


@pytest.fixture
def file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOSTGUARD_NOW", "1000")
    return tmp_path / "host-monitor.alerts"


def at(monkeypatch: pytest.MonkeyPatch, when: int) -> None:
    monkeypatch.setenv("HOSTGUARD_NOW", str(when))


def test_defaults_post_every_run_over_and_nothing_else(file: Path) -> None:
    assert [run(file, "cpu", True) for _ in range(3)] == [POST, POST, POST]
    assert file.read_text() == "1\t0\t1\t1000\tcpu\n"
    assert run(file, "cpu", False) == NONE
    assert not file.exists()


def test_repeat_interval(file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at(monkeypatch, 100000)
    assert run(file, "cpu", True, repeat=3600) == POST
    assert file.read_text() == "1\t100000\t1\t100000\tcpu\n"
    at(monkeypatch, 103599)
    assert run(file, "cpu", True, repeat=3600) == HOLD
    at(monkeypatch, 103600)
    assert run(file, "cpu", True, repeat=3600) == POST
    # A clock stepped back does not mute the alert for hours.
    at(monkeypatch, 90000)
    assert run(file, "cpu", True, repeat=3600) == POST


def test_after_runs_and_resolved(file: Path) -> None:
    assert run(file, "cpu", True, after=2, resolved=True) == HOLD
    # A measure that never fired resolves silently.
    assert run(file, "cpu", False, after=2, resolved=True) == NONE
    assert [run(file, "cpu", True, after=2, resolved=True) for _ in range(3)] == [HOLD, POST, POST]
    assert run(file, "cpu", False, after=2, resolved=True) == RESOLVE
    assert run(file, "cpu", False, after=2, resolved=True) == NONE
    assert not file.exists()


def test_an_event_posts_once_and_keeps_nothing_without_resolved(file: Path) -> None:
    assert run(file, 'stopped "web"', True, EVENT) == POST
    assert not file.exists()
    # With resolved messages it stays, silent, until it runs again.
    assert [run(file, 'stopped "web"', True, EVENT, resolved=True) for _ in range(3)] == [POST, HOLD, HOLD]
    assert run(file, 'stopped "web"', False, resolved=True) == RESOLVE


def test_a_latch_posts_once_and_stays_until_under(file: Path) -> None:
    # Held, as the bash said it (the log line's held=).
    assert [run(file, "runtime", True, LATCH) for _ in range(3)] == [POST, HOLD, HOLD]
    assert file.read_text() == "1\t0\t1\t1000\truntime\n"
    assert run(file, "runtime", False) == NONE
    assert not file.exists()


def test_the_episode_is_when_it_started_firing_kept_by_repeats(file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at(monkeypatch, 5000)
    assert run(file, "cpu", True, after=2) == HOLD
    at(monkeypatch, 5600)
    assert run(file, "cpu", True, after=2) == POST
    at(monkeypatch, 6200)
    assert run(file, "cpu", True, after=2) == POST
    assert file.read_text() == "2\t0\t1\t5600\tcpu\n"
    assert run(file, "cpu", False, after=2) == NONE
    at(monkeypatch, 9000)
    assert [run(file, "cpu", True, after=2) for _ in range(2)] == [HOLD, POST]
    assert file.read_text() == "2\t0\t1\t9000\tcpu\n"


def test_unfire_makes_the_next_run_post_again(file: Path) -> None:
    loaded = state(file, resolved=True)
    assert loaded.observe("runtime", True, LATCH) == POST
    loaded.unfire("runtime")
    assert loaded.save()
    assert not state(file).fired("runtime")
    assert run(file, "runtime", True, LATCH) == POST


def test_written_only_when_changed_atomically_0600(file: Path) -> None:
    assert run(file, "cpu", True, repeat=3600) == POST
    assert oct(file.stat().st_mode & 0o777) == "0o600"
    inode = file.stat().st_ino
    assert run(file, "cpu", True, repeat=3600) == HOLD
    assert file.stat().st_ino == inode
    assert not Path(atomicfile.tmp_path(str(file))).exists()


@pytest.mark.parametrize(
    "content",
    [
        b"garbage\n9\tx\t1\t5\tcpu\n",
        b"1\t0\t2\t5\tcpu\n",
        b"1234\t0\t1\t5\tcpu\n",
        b"\xff\xfe\x00binary\x00\n",
        b"1\t0\t1\t5\t\n",
        b"1\t0\t1\tx\tcpu\n",
        b"1\t0\t1\tcpu\n",
        b"1\t0\t1\t5\tcpu\textra\n",
    ],
)
def test_old_or_corrupt_files_only_forget(file: Path, content: bytes) -> None:
    file.write_bytes(content)
    assert run(file, "cpu", True, repeat=3600) == POST


def test_records_are_kept_as_read(file: Path) -> None:
    file.write_text('2\t5000\t1\t4000\tcpu\n1\t0\t1\t900\tstopped "we\\"b"\n')
    loaded = state(file, after=2)
    assert loaded.fired("cpu") and loaded.fired('stopped "we\\"b"')
    assert loaded.keys("stopped ") == ['stopped "we\\"b"']
    assert loaded.save()
    assert file.read_text() == '2\t5000\t1\t4000\tcpu\n1\t0\t1\t900\tstopped "we\\"b"\n'


def test_an_unreadable_or_unwritable_state(file: Path) -> None:
    file.mkdir()
    loaded = state(file)
    assert loaded.observe("cpu", True) == POST
    assert not loaded.save()
    file.rmdir()
    # The temp file's place taken by a directory: the save fails, the old file stays.
    assert run(file, "cpu", True, repeat=60) == POST
    before = file.read_text()
    Path(atomicfile.tmp_path(str(file))).mkdir()
    loaded = state(file)
    loaded.observe("memory", True)
    assert not loaded.save()
    assert file.read_text() == before


def test_write_atomic_leaves_no_temp_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "file"
    with pytest.raises(OSError):
        atomicfile.write_atomic(str(target), b"x")
    atomicfile.write_atomic(str(tmp_path / "file"), b"data", str(tmp_path / "file.tmp"))
    assert (tmp_path / "file").read_bytes() == b"data"
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_a_writer_killed_at_any_moment_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    """kill -9 of a process replacing the file in a loop, at 30 moments: the file is always one whole version."""
    import random
    import signal

    target = tmp_path / "x.alerts"
    versions = ["".join(f"{n}\t{n * 7}\t1\t{n}\tkey-{n}-{j}\n" for j in range(n % 50 + 1)) for n in range(200)]
    atomicfile.write_atomic(str(target), versions[0].encode())
    for _ in range(30):
        pid = os.fork()
        if pid == 0:
            try:
                while True:
                    for version in versions:
                        atomicfile.write_atomic(str(target), version.encode())
            finally:
                os._exit(0)
        time.sleep(random.uniform(0.0005, 0.01))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert target.read_text() in versions
        # The next load reads whatever is whole; the temp file a killed run left is overwritten.
        assert state(target).save()


runs = st.lists(st.tuples(st.booleans(), st.integers(0, 7200)), min_size=1, max_size=25)


@settings(max_examples=200, deadline=None)
@given(
    steps=runs,
    after=st.integers(1, 4),
    repeat=st.sampled_from([0, 60, 3600]),
    resolved=st.booleans(),
    once=st.sampled_from(["", EVENT, LATCH]),
)
def test_policy_sequences(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[bool, int]],
    after: int,
    repeat: int,
    resolved: bool,
    once: str,
) -> None:
    """Run by run through the file, against the policy as the README states it."""
    path = tmp_path_factory.mktemp("seq") / "x.alerts"
    clock = 10**6
    streak = 0
    fired = False
    last = 0
    for over, step in steps:
        clock += step
        os.environ["HOSTGUARD_NOW"] = str(clock)
        loaded = state(path, after, repeat, resolved)
        action = loaded.observe("k", over, once)
        assert loaded.save()
        if not over:
            assert action == (RESOLVE if fired and resolved else NONE)
            streak, fired = 0, False
            continue
        streak += 1
        if streak < after:
            assert action == HOLD
            continue
        due = not fired or (once == "" and (repeat == 0 or clock < last or clock - last >= repeat))
        if due:
            assert action == POST
            fired, last = True, clock
            if once == EVENT and not resolved:
                # Nothing kept: the next run over starts a new incident.
                streak, fired = 0, False
        else:
            assert action == HOLD
    os.environ.pop("HOSTGUARD_NOW", None)


def test_write_atomic_puts_the_file_and_its_name_on_the_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash (power loss) after write_atomic returns finds the new content under the name: the temp
    file is fsynced before the rename, and the directory after it."""
    import os
    import stat as stat_module

    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        info = os.fstat(fd)
        synced.append("dir" if stat_module.S_ISDIR(info.st_mode) else f"file:{info.st_size}")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    target = tmp_path / "state"
    atomicfile.write_atomic(str(target), b"new content")
    assert synced == ["file:11", "dir"]
    assert target.read_bytes() == b"new content"
