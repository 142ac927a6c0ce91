"""The heartbeat (hostguard/notify/heartbeat.py): none while a monitor is stuck, the bounded GET, the URL file's checks.

The GETs against the real HTTPS receiver are in test/payload/host-monitor.bats and container-monitor.bats.
"""

from __future__ import annotations

import fcntl
import os
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hostguard import runlock, settings
from hostguard.notify import heartbeat


def conf(*lines: str) -> settings.Settings:
    return settings.parse("".join(line + "\n" for line in lines), "t.conf")


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that takes connections (the kernel's backlog) and never says a word: a hung TLS peer."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    yield server.getsockname()[1]
    server.close()


def test_a_get_is_bounded_by_its_deadline(silent_server: int) -> None:
    # A hung peer: the answer is "timed out" (a hang guard of 30 s, not a speed check).
    start = time.monotonic()
    assert heartbeat.get(f"https://127.0.0.1:{silent_server}/ping/x", ssl.create_default_context(), 1) == "timed out"
    assert time.monotonic() - start < 30


def test_only_https(tmp_path: Path) -> None:
    assert heartbeat.get("http://127.0.0.1:1/ping", ssl.create_default_context(), 1) == "protocol refused (https only)"


def recorder(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """heartbeat.get replaced: the URLs asked, each answered 200."""
    asked: list[str] = []

    def get(url: str, _cadata: object, _seconds: float) -> int | str:
        asked.append(url)
        return 200

    monkeypatch.setattr(heartbeat, "get", get)
    return asked


def test_no_file_no_heartbeat_and_a_bad_file_is_refused(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = recorder(monkeypatch)
    heartbeat.ping("host-monitor", conf())
    assert asked == [] and capsys.readouterr().out == ""
    (root / "etc/hostguard").mkdir(parents=True)
    file = root / "etc/hostguard/heartbeat.conf"
    file.write_text("url=https://hc.example.test/ping/SECRETsecret0123456789\n")
    file.chmod(0o644)
    heartbeat.ping("host-monitor", conf())
    out = capsys.readouterr()
    assert asked == []
    assert f"host-monitor: heartbeat file {file} is readable by group or others" in out.err
    assert "SECRET" not in out.out + out.err
    file.chmod(0o600)
    heartbeat.ping("host-monitor", conf())
    assert asked == ["https://hc.example.test/ping/SECRETsecret0123456789"]
    assert "host-monitor: heartbeat sent (HTTP 200)" in capsys.readouterr().out


def test_no_ping_while_the_other_monitor_is_stuck(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = recorder(monkeypatch)
    (root / "etc/hostguard").mkdir(parents=True)
    file = root / "etc/hostguard/heartbeat.conf"
    file.write_text("url=https://hc.example.test/ping/x\n")
    file.chmod(0o600)
    state = root / "var/lib/hostguard"
    state.mkdir(parents=True)
    lock = state / "container-monitor.lock"
    lock.touch()
    old = int(time.time()) - 3600
    os.utime(lock, (old, old))
    with open(lock, "a") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        heartbeat.ping("host-monitor", conf())
    assert asked == []
    assert f"no heartbeat: a container-monitor run started at {runlock.stamp(old)} has not completed" in (
        capsys.readouterr().err
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="the CA rules are root's")
def test_a_ca_bundle_without_a_certificate_is_an_error(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As an unreadable bundle was in 074b512: an error (the operator fixes the file), no heartbeat sent."""
    ca = root / "ca.pem"
    ca.write_text("garbage\n")
    ca.chmod(0o644)
    hook = root / "etc/hostguard/heartbeat.conf"
    hook.parent.mkdir(parents=True)
    hook.write_text("url=https://hc-ping.example.test/ping/x\n")
    hook.chmod(0o600)
    heartbeat.ping("host-monitor", conf(f"NOTIFY_CA_FILE={ca}"))
    err = capsys.readouterr().err
    assert f" ERROR host-monitor: NOTIFY_CA_FILE {ca}: the file holds no PEM or DER certificate ssl accepts" in err
    assert err.rstrip().endswith("no heartbeat sent")
