"""hostguard.install.programs: which programs a part needs, the jail's banaction in fail2ban's reading order."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostguard.install import programs


def jail(root: Path, name: str, text: str) -> None:
    path = root / "etc/fail2ban" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_banaction_own_section_wins_over_default_in_reading_order(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    jail(tmp_path, "jail.conf", "[DEFAULT]\nbanaction = iptables-multiport\n")
    jail(tmp_path, "jail.d/a.local", "[DEFAULT]\nbanaction = nftables-multiport ; comment\n")
    assert programs.banaction_name(str(tmp_path), str(bundle)) == "nftables-multiport"
    (bundle / "fail2ban/jail.d").mkdir(parents=True)
    (bundle / programs.JAIL_SOURCE).write_text("[nginx-bad-request]\nbanaction = ufw[blocktype=reject]\n")
    assert programs.banaction_name(str(tmp_path), str(bundle)) == "ufw"
    # A later .local of the admin's sets the jail's own: it wins (z sorts after hostguard-...).
    jail(tmp_path, "jail.d/z.local", "[nginx-bad-request]\nbanaction = route\n")
    assert programs.banaction_name(str(tmp_path), str(bundle)) == "route"


def test_check_names_part_program_and_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    missing = programs.check(["web", "monitors"], str(tmp_path), str(tmp_path), "podman", True)
    err = capsys.readouterr().err
    assert missing == 3  # nginx, cron, podman
    assert "hostguard: part web needs nginx for the deny rule" in err
    assert "part monitors needs podman for the container monitor (CONTAINER_RUNTIME): not installed" in err
    assert "Debian/Ubuntu package: podman; or, on a host without containers" in err
    assert programs.check(["monitors"], str(tmp_path), str(tmp_path), "podman", False) == 1


def test_found_wants_an_executable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nginx").write_text("#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not programs.found("nginx")
    (tmp_path / "nginx").chmod(0o755)
    assert programs.found("nginx")
