"""The ban tool's intake: scripts/ban-intake.sh (run by the real sh, with the
real flock) appends records, events.drain moves them into the spool exactly
once, in order, whatever moment a drain is killed at; the delivery run's
hand-off takes a record appended just before it releases the lock; the wake
file names the run due, and a writer replaces one that names no process."""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostguard import delivery, events, paths, settings
from hostguard.spool import Spool, SpoolFull

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
INTAKE_SH = SCRIPTS / "ban-intake.sh"
JAIL = "nginx-bad-request"


def spool_dir(root: Path) -> Path:
    return root / paths.SPOOL_PATH.lstrip("/")


def stub_notifier(root: Path) -> Path:
    """A notifier that only records its command lines (the fallback and the `intake` start); an `intake`
    run writes its pid into the wake file and lives for 3 s, as a real one does while it delivers."""
    stub = root / "stub-notify"
    wake = spool_dir(root) / paths.WAKE_NAME
    stub.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >>"{root}/stub.calls"\n'
        f'[ "$1" != intake ] || {{ [ ! -f "{wake}" ] || echo $$ >"{wake}"; exec sleep 3; }}\n'
    )
    stub.chmod(0o755)
    return stub


def calls(root: Path, count: int, wait: float = 10.0) -> str:
    """The stub's command lines once there are COUNT, or after WAIT seconds (an `intake` run is started
    in the background: a check that no further run started waits a little, not the whole 10 s)."""
    path = root / "stub.calls"
    for _ in range(int(wait * 100)):
        if path.exists() and path.read_text().count("\n") >= count:
            break
        time.sleep(0.01)
    return path.read_text() if path.exists() else ""


def wake_pid(root: Path) -> str:
    """The pid in the wake file, once the run started has written it (within 10 s)."""
    wake = spool_dir(root) / paths.WAKE_NAME
    for _ in range(1000):
        if wake.exists() and wake.read_text().strip():
            break
        time.sleep(0.01)
    return wake.read_text().strip()


def write(root: Path, *fields: str) -> subprocess.CompletedProcess[str]:
    """One action line of slack-notify.conf: the fields as positional parameters, ban-intake.sh sourced."""
    script = f"hg_notify={stub_notifier(root)}; . {INTAKE_SH}"
    env = {"PATH": os.environ["PATH"], "HOSTGUARD_ROOT": str(root)}
    return subprocess.run(["sh", "-c", script, "sh", *fields], env=env, capture_output=True, text=True, timeout=30)


def spooled(root: Path) -> list[str]:
    db = sqlite3.connect(spool_dir(root) / "spool.db")
    try:
        return [row[0] for row in db.execute("SELECT text FROM message ORDER BY id")]
    finally:
        db.close()


def ban_text(ip: str, when: str = "1700000000") -> str:
    return f"Ban Alert({JAIL})\n Banned IP: *{ip}*\n Failures: 10 failure(s)\n Timestap: {when}"


@pytest.fixture
def conf(root: Path) -> settings.Settings:
    spool_dir(root).mkdir(parents=True, mode=0o700)
    return settings.parse("", "hostguard.conf")


def test_records_go_to_the_spool_in_order_once_and_the_intake_is_emptied(root: Path, conf: settings.Settings) -> None:
    assert write(root, "start", JAIL, "ops").returncode == 0
    assert write(root, "ban", JAIL, "192.0.2.7", "10", "1700000000.25").returncode == 0
    assert write(root, "unban", JAIL, "2001:db8::/64").returncode == 0
    assert calls(root, 2, 0.5) == "intake\n", "the first record starts one run, the others none"
    assert paths.spool_may_hold_messages(str(spool_dir(root)))
    box = Spool(100)
    assert events.drain(conf, box) == 3
    assert spooled(root) == [
        f"Ban tool ({JAIL}) jail has started",
        ban_text("192.0.2.7"),
        f"Ban Alert({JAIL})\n Unbanned IP: *2001:db8::/64*",
    ]
    assert (spool_dir(root) / paths.INTAKE_NAME).stat().st_size == 0
    assert box.get(events.INTAKE_KEY) is None
    assert events.drain(conf, box) == 0
    assert len(spooled(root)) == 3


def test_records_are_whole_to_the_previous_releases_reader_too(root: Path, conf: settings.Settings) -> None:
    """During an upgrade a delivery run of the previous release may still drain: it splits on newlines
    and takes six tab-separated values ending with `.` (a ban's time digits), so every record keeps that."""
    write(root, "start", JAIL, "ops")
    write(root, "ban", JAIL, "192.0.2.7", "10", "1700000000.25")
    write(root, "unban", JAIL, "2001:db8::/64")
    pieces = (spool_dir(root) / paths.INTAKE_NAME).read_bytes().split(b"\n")
    records = [piece.split(b"\t") for piece in pieces if piece not in (b"", b"\r")]
    assert [fields[0] for fields in records] == [b"start", b"ban", b"unban"]
    assert all(len(fields) == 6 and fields[5] == b"." for fields in records)
    assert [fields[4].isdigit() for fields in records] == [True, False, True], "pids, and a ban's own time"


def test_values_the_intake_may_not_hold_go_to_the_notifier(root: Path, conf: settings.Settings) -> None:
    assert write(root, "ban", JAIL, "192.0.2.1 $(touch pwned)", "10", "1").returncode == 0
    assert write(root, "ban", JAIL, "", "10", "1").returncode == 0
    assert write(root, "ban", JAIL, "192.0.2.1", "10").returncode == 0
    assert write(root, "start", "j" * 256, "ops").returncode == 0
    calls = (root / "stub.calls").read_text().splitlines()
    assert calls == [
        f"event ban --jail {JAIL} --ip 192.0.2.1 $(touch pwned) --failures 10 --time 1",
        f"event ban --jail {JAIL} --ip  --failures 10 --time 1",
        f"event ban --jail {JAIL} --ip 192.0.2.1 --failures 10 --time ",
        f"event start --jail {'j' * 256} --channel ops",
    ]
    assert not (spool_dir(root) / paths.INTAKE_NAME).exists() or events.drain(conf, Spool(100)) == 0


def test_a_wake_file_naming_no_process_is_replaced_and_a_run_started(root: Path, conf: settings.Settings) -> None:
    """The run the wake file names was killed before it removed the file: the next writer starts one."""
    wake = spool_dir(root) / paths.WAKE_NAME
    gone = subprocess.Popen(["true"])
    gone.wait()
    wake.write_text(f"{gone.pid}\n")
    assert write(root, "ban", JAIL, "192.0.2.1", "10", "1").returncode == 0
    assert calls(root, 1) == "intake\n"
    run = int(wake_pid(root))
    assert run != gone.pid
    os.kill(run, 0)  # the new run, alive: the next writer starts nothing
    assert write(root, "ban", JAIL, "192.0.2.2", "10", "1").returncode == 0
    assert calls(root, 2, 0.5) == "intake\n"


@pytest.mark.parametrize("content", [f"{os.getpid()}\n", ""], ids=["a running process", "empty: being started"])
def test_a_wake_file_naming_a_running_process_or_none_yet_starts_nothing(
    root: Path, conf: settings.Settings, content: str
) -> None:
    wake = spool_dir(root) / paths.WAKE_NAME
    wake.write_text(content)
    assert write(root, "ban", JAIL, "192.0.2.1", "10", "1").returncode == 0
    assert calls(root, 1, 0.5) == "", "no run started (a started one records itself within the wait)"
    assert wake.read_text() == content


def test_a_run_that_cannot_load_its_settings_stays_so_that_a_flood_starts_only_it(root: Path) -> None:
    """The real notifier, its settings unreadable: the first record starts a run, which stays (its pid
    in the wake file alive), so the next records start none; the records wait in the intake."""
    spool_dir(root).mkdir(parents=True, mode=0o700)
    settings_file = root / paths.SETTINGS_PATH.lstrip("/")
    settings_file.parent.mkdir(parents=True)
    settings_file.write_bytes(b"CPU_THRESHOLD=\xff\n")
    notifier = SCRIPTS / "hostguard-notify"
    env = {"PATH": os.environ["PATH"], "HOSTGUARD_ROOT": str(root)}
    script = f"hg_notify={notifier}; . {INTAKE_SH}"
    runs: set[int] = set()
    try:
        for i in range(1, 6):
            ban = ["ban", JAIL, f"192.0.2.{i}", "10", "1"]
            assert subprocess.run(["sh", "-c", script, "sh", *ban], env=env, timeout=30).returncode == 0
            runs.add(int(wake_pid(root)))
            time.sleep(0.2)  # the run has failed to load its settings by now
        assert len(runs) == 1
        (run,) = runs
        os.kill(run, 0)
        assert Path(f"/proc/{run}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")[-2:] == [bytes(notifier), b"intake"]
        assert (spool_dir(root) / paths.INTAKE_NAME).read_bytes().count(b"\t.\n") == 5
        flush_log = (spool_dir(root) / ".flush.log").read_text()
        assert "not UTF-8 text" in flush_log and "looking again in 60 s" in flush_log
    finally:
        for run in runs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(run, signal.SIGKILL)


def test_a_run_holding_for_its_settings_delivers_once_they_are_fixed(root: Path) -> None:
    spool_dir(root).mkdir(parents=True, mode=0o700)
    settings_file = root / paths.SETTINGS_PATH.lstrip("/")
    settings_file.parent.mkdir(parents=True)
    settings_file.write_bytes(b"CPU_THRESHOLD=\xff\n")
    env = {"PATH": os.environ["PATH"], "HOSTGUARD_ROOT": str(root), "HOSTGUARD_INTAKE_HOLD": "1"}
    script = f"hg_notify={SCRIPTS / 'hostguard-notify'}; . {INTAKE_SH}"
    ban = ["ban", JAIL, "192.0.2.1", "10", "1"]
    assert subprocess.run(["sh", "-c", script, "sh", *ban], env=env, timeout=30).returncode == 0
    run = int(wake_pid(root))
    settings_file.write_text("")  # fixed during the hold
    for _ in range(1000):
        if not Path(f"/proc/{run}").exists():
            break
        time.sleep(0.01)
    assert spooled(root) == [ban_text("192.0.2.1", "1")], "drained by the run after its second look"
    assert not (spool_dir(root) / paths.WAKE_NAME).exists()


def test_a_run_that_finds_the_delivery_lock_held_leaves_no_dead_pid_behind(root: Path, conf: settings.Settings) -> None:
    """The holder takes the intake after its release; the run empties the wake file (a run is due), so
    the writers of a flood meanwhile start no run each (a pid of a run that exited would make them)."""
    calls_file = root / "runs"
    wrapper = root / "counting-notify"
    wrapper.write_text(f'#!/bin/sh\necho "$1" >>"{calls_file}"\nexec {SCRIPTS / "hostguard-notify"} "$@"\n')
    wrapper.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "HOSTGUARD_ROOT": str(root)}
    script = f"hg_notify={wrapper}; . {INTAKE_SH}"
    Spool(100).db()  # the spool
    holder = os.open(spool_dir(root) / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        wake = spool_dir(root) / paths.WAKE_NAME
        for i in range(1, 6):
            ban = ["ban", JAIL, f"192.0.2.{i}", "10", "1"]
            assert subprocess.run(["sh", "-c", script, "sh", *ban], env=env, timeout=30).returncode == 0
            for _ in range(1000):  # the first run: drained, found the lock held, emptied the wake file
                if i > 1 or (spooled(root) and wake.read_text() == ""):
                    break
                time.sleep(0.01)
            time.sleep(0.1)  # a run a writer started would have written its pid by now
        assert calls_file.read_text() == "intake\n"
        assert spooled(root) == [ban_text("192.0.2.1", "1")]
        assert wake.read_text() == ""
    finally:
        os.close(holder)


def test_a_wake_file_naming_a_zombie_is_replaced(root: Path, conf: settings.Settings) -> None:
    zombie = subprocess.Popen(["true"])
    try:
        for _ in range(1000):
            if Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(") ")[2].startswith("Z"):
                break
            time.sleep(0.01)
        (spool_dir(root) / paths.WAKE_NAME).write_text(f"{zombie.pid}\n")
        assert write(root, "ban", JAIL, "192.0.2.1", "10", "1").returncode == 0
        assert calls(root, 1) == "intake\n"
    finally:
        zombie.wait()


def test_a_write_that_fails_goes_to_the_notifier(root: Path, conf: settings.Settings) -> None:
    (spool_dir(root) / paths.INTAKE_NAME).mkdir()  # cannot be appended to
    assert write(root, "ban", JAIL, "192.0.2.9", "10", "1").returncode == 0
    assert (root / "stub.calls").read_text() == f"event ban --jail {JAIL} --ip 192.0.2.9 --failures 10 --time 1\n"


def test_a_cut_record_is_skipped_and_a_refused_one_is_a_dead_letter(
    root: Path, conf: settings.Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    intake = spool_dir(root) / paths.INTAKE_NAME
    cut, refused = b"\nban\tj\t192.0.2.1\t1", b"\nban\tj\t999.0.2.1\t10\t1\t.\n"
    intake.write_bytes(cut + refused + b"\nban\tj\t192.0.2.2\t10\t5\t.\n")
    box = Spool(100)
    assert events.drain(conf, box) == 2
    assert spooled(root) == [ban_text("192.0.2.2", "5").replace(JAIL, "j")]
    assert [letter.reason for letter in box.dead_letters()] == ["refused intake record: --ip IP is required"]
    err = capsys.readouterr().err
    assert "skipped a record cut short" in err and "kept in the dead letters" in err


def test_a_record_a_full_disk_cut_before_its_newline_is_not_completed_by_the_next(
    root: Path, conf: settings.Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its writer handed the message to the notifier: spooling it too would post that ban twice."""
    intake = spool_dir(root) / paths.INTAKE_NAME
    intake.write_bytes(b"\r\n41\tban\tj\t192.0.2.1\t10\t5\t.")  # all but the newline written
    write(root, "ban", "j", "192.0.2.2", "10", "5")
    box = Spool(100)
    assert events.drain(conf, box) == 1
    assert spooled(root) == [ban_text("192.0.2.2", "5").replace(JAIL, "j")]
    assert "skipped a record cut short" in capsys.readouterr().err
    intake.write_bytes(b"\r\n41\tban\tj\t192.0.2.3\t10\t5\t.")  # the same, alone in the intake
    assert events.drain(conf, box) == 0
    assert len(spooled(root)) == 1 and intake.stat().st_size == 0


def test_a_drain_killed_between_its_commit_and_emptying_the_intake_spools_nothing_twice(
    root: Path, conf: settings.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root, "ban", JAIL, "192.0.2.1", "10", "1700000000")

    def killed(_fd: int, _size: int) -> None:
        raise KeyboardInterrupt  # stands for the kill: nothing after the commit runs

    with monkeypatch.context() as patch:
        patch.setattr(os, "ftruncate", killed)
        with pytest.raises(KeyboardInterrupt):
            events.drain(conf, Spool(100))
    write(root, "ban", JAIL, "192.0.2.2", "10", "1700000000")
    assert events.drain(conf, Spool(100)) == 1
    assert spooled(root) == [ban_text("192.0.2.1"), ban_text("192.0.2.2")]


def test_a_key_left_by_a_drain_killed_after_emptying_the_intake_hides_nothing(
    root: Path, conf: settings.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root, "ban", JAIL, "192.0.2.1", "10", "1700000000")
    box = Spool(100)
    monkeypatch.setattr(box, "put", lambda _key, _value: None)  # killed before clearing the key
    assert events.drain(conf, box) == 1
    assert box.get(events.INTAKE_KEY) is not None
    write(root, "ban", JAIL, "192.0.2.3", "10", "1700000000")
    assert events.drain(conf, box) == 1
    assert spooled(root) == [ban_text("192.0.2.1"), ban_text("192.0.2.3")]


def test_a_key_left_behind_does_not_hide_the_same_message_written_again(
    root: Path, conf: settings.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start message after fail2ban restarts has the same text: its writer's pid keeps the record apart."""
    write(root, "start", JAIL, "ops")
    box = Spool(100)
    monkeypatch.setattr(box, "put", lambda _key, _value: None)  # killed before clearing the key
    assert events.drain(conf, box) == 1
    write(root, "start", JAIL, "ops")
    assert events.drain(conf, box) == 1
    assert spooled(root) == [f"Ban tool ({JAIL}) jail has started"] * 2


def test_a_spool_that_cannot_be_written_leaves_the_intake_as_it_is(
    root: Path, conf: settings.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root, "ban", JAIL, "192.0.2.1", "10", "1700000000")
    intake = spool_dir(root) / paths.INTAKE_NAME
    before = intake.read_bytes()
    box = Spool(100)

    def full(*_args: object) -> None:
        raise SpoolFull("database or disk is full")

    monkeypatch.setattr(box, "enqueue_batch", full)
    assert events.drain(conf, box) == 0
    assert intake.read_bytes() == before


def test_a_drain_never_takes_the_spools_reserve(
    root: Path, conf: settings.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The intake keeps its records while the disk is full; the reserve is for a message nothing else keeps."""
    write(root, "ban", JAIL, "192.0.2.1", "10", "1700000000")
    box = Spool(100)
    box.make_reserve()

    def full(*_args: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(box, "_enqueue_batch", full)
    assert events.drain(conf, box) == 0
    assert (spool_dir(root) / ".reserve").exists()
    assert (spool_dir(root) / paths.INTAKE_NAME).stat().st_size > 0


def test_a_message_spooled_directly_comes_after_the_records_waiting_in_the_intake(
    root: Path, conf: settings.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback (a value the intake may not hold) or a ban by hand: what waits in the intake is older."""
    from hostguard import notify

    write(root, "ban", JAIL, "192.0.2.1", "10", "1700000000")
    with monkeypatch.context() as patch:
        patch.setattr(notify, "start_detached_flush", lambda *_args: None)
        assert notify.event(conf, ["ban", "--jail", JAIL, "--ip", "192.0.2.2", "--failures", "10", "--time", "1"]) == 0
    assert spooled(root) == [ban_text("192.0.2.1"), ban_text("192.0.2.2", "1")]


def test_a_message_spooled_directly_leaves_a_large_intake_to_the_run_due(
    root: Path, conf: settings.Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Draining it first would keep fail2ban's action (the fallback) waiting for megabytes."""
    from hostguard import notify

    intake = spool_dir(root) / paths.INTAKE_NAME
    intake.write_bytes(b"\r\nban\tj\t192.0.2.1\t10\t5\t.\n" * 3000)
    before = intake.stat().st_size
    assert before > notify.EVENT_DRAIN_MAX
    with monkeypatch.context() as patch:
        patch.setattr(notify, "start_detached_flush", lambda *_args: None)
        assert notify.event(conf, ["ban", "--jail", JAIL, "--ip", "192.0.2.2", "--failures", "10", "--time", "1"]) == 0
    assert spooled(root) == [ban_text("192.0.2.2", "1")]
    assert intake.stat().st_size == before


def test_a_record_appended_just_before_the_delivery_lock_is_released_is_delivered(
    root: Path, conf: settings.Settings, monkeypatch: pytest.MonkeyPatch, posted: list[str]
) -> None:
    """The writer finds the wake file present (so it starts no run): the run releasing the lock takes its record."""
    real_close = os.close
    appended: list[bool] = []

    def close(fd: int) -> None:
        if not appended and os.readlink(f"/proc/self/fd/{fd}").endswith("/.lock"):
            appended.append(write(root, "ban", JAIL, "192.0.2.2", "10", "1700000000").returncode == 0)
        real_close(fd)

    write(root, "ban", JAIL, "192.0.2.1", "10", "1700000000")
    assert (spool_dir(root) / paths.WAKE_NAME).exists()
    monkeypatch.setattr(os, "close", close)
    assert delivery.flush(conf, Spool(100)) == 0
    monkeypatch.setattr(os, "close", real_close)
    assert appended == [True]
    assert (root / "stub.calls").read_text() == "intake\n", "the second writer found the wake file"
    assert posted == [ban_text("192.0.2.1"), ban_text("192.0.2.2")]
    assert not (spool_dir(root) / paths.WAKE_NAME).exists()


DRAIN = """
import sys
from hostguard import events, settings
from hostguard.spool import Spool
while True:
    events.drain(settings.parse("", "hostguard.conf"), Spool(100000))
"""


def test_writers_racing_drains_killed_at_random_lose_and_repeat_nothing(root: Path, conf: settings.Settings) -> None:
    """4 writers of 40 records each, through the real sh, while two drain processes at a time run and
    are SIGKILLed at random moments: at the end every record is spooled exactly once, each writer's in order."""
    env = {"PATH": os.environ["PATH"], "HOSTGUARD_ROOT": str(root), "PYTHONPATH": str(SCRIPTS)}
    stub = stub_notifier(root)
    writer = (
        f"hg_notify={stub}; i=0; while [ $i -lt 40 ]; do i=$((i+1)); "
        f'( set -- ban {JAIL} "192.0.$1.$i" 10 1700000000; . {INTAKE_SH} ) || exit 1; done'
    )
    writers = [subprocess.Popen(["sh", "-c", writer, "sh", str(w)], env=env) for w in range(4)]
    chance = random.Random(1)
    kills = 0
    while any(w.poll() is None for w in writers):
        drainers = [subprocess.Popen([sys.executable, "-c", DRAIN], env=env) for _ in range(2)]
        for drainer in drainers:
            try:
                drainer.wait(timeout=chance.uniform(0.05, 0.3))
            except subprocess.TimeoutExpired:
                drainer.send_signal(signal.SIGKILL)
                drainer.wait()
                kills += 1
    assert [w.wait(timeout=60) for w in writers] == [0, 0, 0, 0]
    assert kills > 0
    events.drain(conf, Spool(100000))
    texts = spooled(root)
    for w in range(4):
        mine = [t for t in texts if f"*192.0.{w}." in t]
        assert mine == [ban_text(f"192.0.{w}.{i}") for i in range(1, 41)], f"writer {w}"
    assert len(texts) == 160
