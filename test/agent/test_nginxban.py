"""hostguard-nginx-ban: the list's entries as nginx writes $remote_addr, the atomic list, refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard import nginxban, paths


@pytest.mark.parametrize(
    ("given_ip", "listed"),
    [
        ("192.0.2.1", "192.0.2.1"),
        ("2001:DB8::1", "2001:db8::1"),
        ("2001:db8:0:0:0:0:0:1", "2001:db8::1"),
        ("::ffff:192.0.2.2", "::ffff:192.0.2.2"),
        ("192.0.2.9/32", "192.0.2.9"),
        ("2001:db8::7/128", "2001:db8::7"),
    ],
)
def test_entries_are_spelled_as_nginx_writes_remote_addr(given_ip: str, listed: str) -> None:
    assert nginxban.entry(given_ip) == listed


@pytest.mark.parametrize("bad", ["1.2.3.4;}", "256.1.1.1", "1::2::3", "", "a b", "1:2:3:4:5:6:7:8:9", "0x7f.1"])
def test_what_is_not_an_address_is_refused_unquoted(bad: str) -> None:
    with pytest.raises(nginxban.Refused, match="not an IP address; the ban list is unchanged"):
        nginxban.entry(bad)


@pytest.mark.parametrize("network", ["192.0.2.0/24", "2001:db8::/64"])
def test_a_network_ban_is_refused_naming_the_firewall(network: str) -> None:
    with pytest.raises(nginxban.Refused, match="holds at the firewall only"):
        nginxban.entry(network)


@given(st.ip_addresses())
def test_every_address_round_trips_through_the_list(tmp_path_factory: pytest.TempPathFactory, address: object) -> None:
    state = tmp_path_factory.mktemp("state")
    listed = nginxban.entry(str(address))
    nginxban.write_list(str(state), [listed])
    assert nginxban.read_list(str(state)) == [listed]


def test_the_list_is_root_only_and_replaced_whole(tmp_path: Path) -> None:
    os.umask(0o077)
    nginxban.write_list(str(tmp_path), ["192.0.2.1", "2001:db8::1"])
    listed = tmp_path / nginxban.LIST_NAME
    assert listed.stat().st_mode & 0o777 == 0o600
    assert listed.read_text().splitlines()[1:] == ["192.0.2.1 1;", "2001:db8::1 1;"]
    assert not (tmp_path / nginxban.TMP_NAME).exists()
    # A line someone else wrote is not an entry: dropped at the next write.
    listed.write_text(listed.read_text() + "include /etc/shadow 1;\n10.0.0.1 1;\n")
    assert nginxban.read_list(str(tmp_path)) == ["192.0.2.1", "2001:db8::1", "10.0.0.1"]


def test_a_symlinked_list_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("10.0.0.1 1;\n")
    (tmp_path / nginxban.LIST_NAME).symlink_to(target)
    with pytest.raises(OSError):
        nginxban.read_list(str(tmp_path))


def test_a_burst_of_bans_is_one_write_and_one_reload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """100 bans queued at once (fail2ban's actions thread calling ban per address) reach the list in a
    few passes of the writer thread, each one write and one nginx -t and reload, not one per ban."""
    import logging
    import time

    monkeypatch.setattr(paths, "ROOT", str(tmp_path))
    (tmp_path / "var/lib/hostguard").mkdir(parents=True)
    reloads: list[str] = []
    monkeypatch.setattr(nginxban, "reload_nginx", lambda what, *_: reloads.append(what))
    bans = nginxban.BanList("/nonexistent.pid", [], logging.getLogger("test"))
    addresses = [f"198.18.0.{i}" for i in range(1, 101)]
    for address in addresses:
        bans.ban(address)
    bans.unban("198.18.0.1")
    for _ in range(100):
        if bans._writer is None:
            break
        time.sleep(0.05)
    assert nginxban.read_list(str(tmp_path / "var/lib/hostguard")) == addresses[1:]
    assert 1 <= len(reloads) <= 2, reloads
    with pytest.raises(nginxban.Refused):
        bans.ban("fe80::1%eth0")
    bans.clear()
    assert nginxban.read_list(str(tmp_path / "var/lib/hostguard")) == []


def test_the_writer_outlives_any_failure_and_tries_a_failed_pass_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging
    import time

    monkeypatch.setattr(paths, "ROOT", str(tmp_path))
    state = tmp_path / "var/lib/hostguard"
    state.mkdir(parents=True)
    (state / nginxban.LIST_NAME).mkdir()  # the list unreadable: read_list raises IsADirectoryError
    monkeypatch.setattr(nginxban, "reload_nginx", lambda *_: None)
    bans = nginxban.BanList("/nonexistent.pid", [], logging.getLogger("test"))

    def settled() -> None:
        for _ in range(200):
            if bans._writer is None:
                return
            time.sleep(0.05)
        raise AssertionError("the writer did not finish")

    bans.ban("192.0.2.1")
    settled()
    (state / nginxban.LIST_NAME).rmdir()
    bans.ban("192.0.2.2")  # a new writer starts: the failed one did not leave itself registered
    settled()
    assert nginxban.read_list(str(state)) == ["192.0.2.2"]
