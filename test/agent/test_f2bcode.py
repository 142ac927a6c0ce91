"""A deploy that changes hostguard's code reaches fail2ban's process (issue 43, item 5).

fail2ban keeps the `hostguard` package in fail2ban-server's sys.modules across `fail2ban-client reload`, so
install restarts a running fail2ban when the package or an action file differs from what it recorded at the
last start or restart, and reloads it otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hostguard import paths
from hostguard.errors import HostguardError
from hostguard.install import f2bcode, services


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """services.apply on the live root of a fake host (paths under TMP_PATH), fail2ban running."""
    monkeypatch.setattr(paths, "ROOT", str(tmp_path))
    (tmp_path / "var/lib/hostguard").mkdir(parents=True)
    package = tmp_path / f2bcode.PACKAGE.lstrip("/")
    package.mkdir(parents=True)
    (package / "spool.py").write_text("SCHEMA = 1\n")
    actions = tmp_path / "etc/fail2ban/action.d"
    actions.mkdir(parents=True)
    (actions / "slack-notify.py").write_text("# action\n")
    made: list[tuple[str, ...]] = []

    def run(*argv: str, quiet: bool = False) -> bool:
        made.append(argv)
        return True

    monkeypatch.setattr(services, "_run", run)
    monkeypatch.setattr(services, "fail2ban_test", lambda: (True, ""))
    monkeypatch.setattr(services, "_systemd", lambda: False)
    monkeypatch.setattr(services, "allowed", lambda tool, root: True)
    return made


def verbs(calls: list[tuple[str, ...]]) -> list[str]:
    return [argv[1] for argv in calls if argv[0] == "fail2ban-client" and argv[1] != "ping"]


def test_a_changed_package_or_action_restarts_fail2ban_and_the_same_code_reloads_it(
    tmp_path: Path, calls: list[tuple[str, ...]]
) -> None:
    # Installed by an earlier payload, nothing recorded: the running server may hold any code.
    services.apply("fail2ban", "")
    assert verbs(calls) == ["restart"]
    assert f2bcode.recorded() == f2bcode.digest()
    calls.clear()
    services.apply("fail2ban", "")
    assert verbs(calls) == ["reload"]
    calls.clear()
    (tmp_path / f2bcode.PACKAGE.lstrip("/") / "spool.py").write_text("SCHEMA = 2\n")
    services.apply("fail2ban", "")
    assert verbs(calls) == ["restart"]
    calls.clear()
    (tmp_path / "etc/fail2ban/action.d/hostguard-nginx-ban.py").write_text("# a new action\n")
    services.apply("fail2ban", "")
    assert verbs(calls) == ["restart"]
    assert f2bcode.recorded() == f2bcode.digest()


def test_a_failed_restart_fails_the_install_and_records_nothing(
    calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """fail2ban ran before the restart; after a failed one it may be stopped with every ban lifted: the
    install must not say "restarted" and succeed."""
    monkeypatch.setattr(services, "_run", lambda *argv, quiet=False: argv[1] == "ping")
    with pytest.raises(HostguardError, match="fail2ban's restart failed.*may not be running"):
        services.apply("fail2ban", "")
    assert f2bcode.recorded() is None


def test_a_failed_start_is_said_and_records_nothing(
    calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(services, "_run", lambda *argv, quiet=False: False)
    services.apply("fail2ban", "")
    assert "fail2ban was not running and its start failed" in capsys.readouterr().err
    assert f2bcode.recorded() is None


def test_systemd_restarts_the_service(calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "_systemd", lambda: True)
    services.apply("fail2ban", "")
    assert ("systemctl", "restart", "fail2ban") in calls


def test_after_an_uninstall_it_reloads_and_records_nothing(calls: list[tuple[str, ...]]) -> None:
    """Uninstall removes the record with part bantool: nothing may write it again after."""
    services.apply("fail2ban", "", undoing=True)
    assert verbs(calls) == ["reload"]
    assert f2bcode.recorded() is None


def test_an_uninstall_leaves_a_stopped_fail2ban_stopped(
    calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user stopped fail2ban: uninstalling hostguard must not start it again."""
    made: list[tuple[str, ...]] = []

    def run(*argv: str, quiet: bool = False) -> bool:
        made.append(argv)
        return argv[:2] != ("fail2ban-client", "ping")

    monkeypatch.setattr(services, "_run", run)
    services.apply("fail2ban", "", undoing=True)
    assert [argv for argv in made if argv[:2] != ("fail2ban-client", "ping")] == []
    assert f2bcode.recorded() is None


def test_set_webhooks_reload_skips_a_configuration_that_fails_its_test(
    calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After an uninstall on a host without auth.log, fail2ban runs on a configuration that fails its test
    (the sshd drop-in went with part bantool); the next deploy's webhook step must not fail on it: part
    bantool's install places the drop-in and tests fail2ban."""
    monkeypatch.setattr(services, "fail2ban_test", lambda: (False, "ERROR   Have not found any log file for sshd jail"))
    services.reload_if_running("")
    assert verbs(calls) == []
    assert "fail2ban not reloaded" in capsys.readouterr().err


def test_a_record_that_cannot_be_written_is_said_not_raised(
    tmp_path: Path, calls: list[tuple[str, ...]], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "var/lib/hostguard").rmdir()
    services.apply("fail2ban", "")
    assert verbs(calls) == ["restart"]
    assert "the next install restarts fail2ban again" in capsys.readouterr().err
