"""The ban tool's chat action inside fail2ban: what hostguard's code logs there reaches fail2ban's log, and
a chat service that hangs does not hold fail2ban's stop."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path

import pytest

from hostguard import log, settings
from hostguard.notify import events
from hostguard.notify.spool import Spool, SpoolFull


class Keep(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_the_ban_actions_lines_go_to_fail2bans_log(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """slack-notify.py hands BanNotices fail2ban's logger: a message LOST is in fail2ban.log, not on the
    server's stderr (issue 45)."""
    monkeypatch.setattr(log, "_logger", None)
    records: list[logging.LogRecord] = []
    logger = logging.getLogger("fail2ban.test-action")
    handler = Keep(records)
    logger.addHandler(handler)
    monkeypatch.setattr(events, "start_flush", lambda: None)

    def full(*_args: object, **_kwargs: object) -> None:
        raise SpoolFull("disk full")

    notices = events.BanNotices("ops", logger)
    monkeypatch.setattr(Spool, "enqueue", full)
    with pytest.raises(SpoolFull):
        notices.ban("j", "192.0.2.1", "3", "1700000000")
    logger.removeHandler(handler)
    assert [r.levelno for r in records] == [logging.ERROR]
    assert "this ban-tool message is LOST" in records[0].getMessage()
    assert "LOST" not in capsys.readouterr().err


def test_stop_holds_fail2ban_at_most_a_few_seconds_while_the_chat_service_hangs(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 43: fail2ban's stop waited NOTIFY_BUDGET + 5 s (46 s) with its firewall bans already lifted."""
    monkeypatch.setattr(log, "_logger", None)
    timeouts: list[float] = []

    def hung(argv: list[str], **kwargs: float) -> None:
        timeouts.append(kwargs["timeout"])
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    notices = events.BanNotices("ops", logging.getLogger("fail2ban.test-stop"))
    notices.ban("j", "192.0.2.1", "3", "1700000000")
    # The flush a ban started, hung on the chat service.
    flush = notices._flush = subprocess.Popen(["sleep", "120"])
    monkeypatch.setattr(subprocess, "run", hung)
    began = time.monotonic()
    notices.stop("j")
    assert time.monotonic() - began < events.STOP_SECONDS + 2
    assert flush.poll() is not None  # killed: what it had claimed goes back at the next run
    assert len(timeouts) == 1 and timeouts[0] <= 1
    assert "stop message was not delivered within 5 s: it waits in the spool" in caplog.text


def test_a_ban_reads_the_settings_again_only_when_the_file_changed(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings are parsed once per change of hostguard.conf, not at every ban (issue 43, item 6); a
    change takes effect at the next ban."""
    monkeypatch.setattr(events, "start_flush", lambda: None)
    conf = root / "etc/hostguard/hostguard.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("HOST_NAME=web-1\n")
    parsed: list[str] = []

    def load() -> settings.Settings:
        parsed.append(conf.read_text())
        return settings.load()

    monkeypatch.setattr(events, "load", load)
    notices = events.BanNotices("ops")
    notices.ban("j", "192.0.2.1", "3", "1700000000")
    notices.ban("j", "192.0.2.2", "3", "1700000000")
    replaced = conf.with_name("hostguard.conf.new")
    replaced.write_text("HOST_NAME=web-1\nALERT_HOST_LABEL=true\n")
    replaced.replace(conf)  # as install writes it: a new file renamed in place
    notices.ban("j", "192.0.2.3", "3", "1700000000")
    assert len(parsed) == 2
    box = Spool(10, str(root / "var/spool/hostguard"))
    texts = [r[0] for r in box.db().execute("SELECT text FROM message ORDER BY id")]
    assert [t.startswith("[web-1] ") for t in texts] == [False, False, True]


def test_the_lock_probe_sees_a_run_that_holds_the_delivery_lock(tmp_path: Path) -> None:
    """lock_free keeps its descriptor and lets the lock go at once: a run can take it right after."""
    box, run = Spool(10, str(tmp_path)), Spool(10, str(tmp_path))
    assert box.lock_free() and box.lock_free()
    held = run.try_lock(0.0)
    assert held is not None
    assert not box.lock_free()
    os.close(held)
    assert box.lock_free()
    again = run.try_lock(0.0)
    assert again is not None
    os.close(again)
