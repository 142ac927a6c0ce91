"""hostguard-nginx-ban: the list's entries as nginx writes $remote_addr, the atomic list, refusals, and the
writer thread: every spelling of an address, one reload per RELOAD_GAP, a failed pass kept until applied."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard import paths
from hostguard.ban import nginxban


def listed(state: Path | str) -> list[str]:
    """The addresses in the list file, in order (its header dropped)."""
    try:
        lines = (Path(state) / nginxban.LIST_NAME).read_text().splitlines()
    except FileNotFoundError:
        return []
    assert all(line.endswith(" 1;") for line in lines[1:]), lines
    return [line[: -len(" 1;")] for line in lines[1:]]


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
    item = nginxban.entry(str(address))
    nginxban.write_list(str(state), [item])
    assert item in listed(state)
    assert nginxban.entry(listed(state)[-1]) == item or nginxban.entry(listed(state)[0]) == item


def test_the_list_is_root_only_and_replaced_whole(tmp_path: Path) -> None:
    os.umask(0o077)
    nginxban.write_list(str(tmp_path), ["2001:db8::1", "10.0.0.1"])
    nginxban.write_list(str(tmp_path), ["192.0.2.1", "2001:db8::1"])
    path = tmp_path / nginxban.LIST_NAME
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.read_text().splitlines()[1:] == ["192.0.2.1 1;", "::ffff:192.0.2.1 1;", "2001:db8::1 1;"]
    assert not (tmp_path / nginxban.TMP_NAME).exists()


@pytest.mark.parametrize(
    ("banned", "spelled"),
    [
        (["192.0.2.1"], ["192.0.2.1", "::ffff:192.0.2.1"]),
        (["::ffff:192.0.2.2"], ["192.0.2.2", "::ffff:192.0.2.2"]),
        (["192.0.2.3", "::ffff:192.0.2.3"], ["192.0.2.3", "::ffff:192.0.2.3"]),
        (["2001:db8::1"], ["2001:db8::1"]),
    ],
)
def test_an_address_is_listed_in_every_form_nginx_can_see_it_in(
    tmp_path: Path, banned: list[str], spelled: list[str]
) -> None:
    """A dual-stack proxy forwards an IPv4 client as ::ffff:a.b.c.d, which nginx maps; fail2ban bans a.b.c.d."""
    nginxban.write_list(str(tmp_path), [nginxban.entry(ip) for ip in banned])
    assert listed(tmp_path) == spelled


def test_a_symlinked_list_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("10.0.0.1 1;\n")
    (tmp_path / nginxban.LIST_NAME).symlink_to(target)
    nginxban.write_list(str(tmp_path), ["192.0.2.1"])
    assert target.read_text() == "10.0.0.1 1;\n"
    assert not (tmp_path / nginxban.LIST_NAME).is_symlink()


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(paths, "ROOT", str(tmp_path))
    directory = tmp_path / "var/lib/hostguard"
    directory.mkdir(parents=True)
    return directory


def settled(bans: nginxban.BanList, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if bans._writer is None:
            return
        time.sleep(0.05)
    raise AssertionError("the writer did not finish")


def test_a_burst_of_bans_is_one_write_and_one_reload(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """100 bans queued at once (fail2ban's actions thread calling ban per address) reach the list in one
    pass of the writer thread: one write, one nginx -t and reload, not one per ban."""
    reloads: list[str] = []
    monkeypatch.setattr(nginxban, "reload_nginx", lambda what, *_: reloads.append(what))
    bans = nginxban.BanList("/nonexistent.pid", [], logging.getLogger("test"))
    addresses = [f"2001:db8::{i}" for i in range(1, 101)]
    for address in addresses:
        bans.ban(address)
    bans.unban("2001:db8::1")
    settled(bans)
    assert listed(state) == addresses[1:]
    assert len(reloads) == 1, reloads
    with pytest.raises(nginxban.Refused):
        bans.ban("fe80::1%eth0")
    bans.clear()
    assert listed(state) == []


def test_reloads_are_one_per_gap_however_the_bans_are_spread(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client with many addresses cannot reload nginx at will: bans every 50 ms for 2.5 s, 3 reloads at most."""
    monkeypatch.setattr(nginxban, "RELOAD_GAP", 1.0, raising=False)
    reloads: list[float] = []
    monkeypatch.setattr(nginxban, "reload_nginx", lambda *_: reloads.append(time.monotonic()))
    bans = nginxban.BanList("/nonexistent.pid", [], logging.getLogger("test"))
    for i in range(50):
        bans.ban(f"2001:db8::{i + 1}")
        time.sleep(0.05)
    settled(bans)
    assert len(listed(state)) == 50
    assert 2 <= len(reloads) <= 4, reloads
    assert all(later - earlier >= 0.99 for earlier, later in zip(reloads, reloads[1:])), reloads


def test_a_failed_nginx_test_stays_pending_and_is_applied_later_without_another_ban(
    state: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The list is written before nginx -t: a retry must test and reload again, not find the change made."""
    monkeypatch.setattr(nginxban, "RELOAD_GAP", 0.1, raising=False)
    outcomes = [False, False, True]
    tests: list[list[str]] = []

    def reload(*_: object) -> None:
        tests.append(listed(state))
        if not outcomes.pop(0):
            raise nginxban.Refused("nginx -t failed")

    monkeypatch.setattr(nginxban, "reload_nginx", reload)
    bans = nginxban.BanList("/nonexistent.pid", [], logging.getLogger("test"))
    bans.ban("2001:db8::7")
    settled(bans)
    assert tests == [["2001:db8::7"]] * 3
    assert outcomes == []
    assert "applied after 2 failed pass(es)" in caplog.text


def test_a_change_is_kept_through_any_number_of_failed_writes_and_the_count_starts_again(
    state: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk for a moment: the ban is written once it can be, however many passes failed before."""
    monkeypatch.setattr(nginxban, "RELOAD_GAP", 0.02, raising=False)
    monkeypatch.setattr(nginxban, "RETRY_MAX", 0.05, raising=False)
    monkeypatch.setattr(nginxban, "reload_nginx", lambda *_: None)
    real_write = nginxban.write_list
    failing = [6]

    def write(where: str, entries: list[str]) -> None:
        if failing[0]:
            failing[0] -= 1
            raise nginxban.Refused("cannot write: No space left on device")
        real_write(where, entries)

    monkeypatch.setattr(nginxban, "write_list", write)
    bans = nginxban.BanList("/nonexistent.pid", [], logging.getLogger("test"))
    bans.ban("2001:db8::a1")
    settled(bans)
    assert listed(state) == ["2001:db8::a1"]
    failing[0] = 5
    bans.ban("2001:db8::a2")
    settled(bans)
    assert listed(state) == ["2001:db8::a1", "2001:db8::a2"]
    assert "applied after 6 failed pass(es)" in caplog.text
    assert "applied after 5 failed pass(es)" in caplog.text
    assert "given up" not in caplog.text


def test_the_writer_outlives_any_failure(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nginxban, "RELOAD_GAP", 0.05, raising=False)
    monkeypatch.setattr(nginxban, "RETRY_MAX", 0.1, raising=False)
    (state / nginxban.LIST_NAME).mkdir()  # the list cannot be replaced: rename onto a directory fails
    monkeypatch.setattr(nginxban, "reload_nginx", lambda *_: None)
    bans = nginxban.BanList("/nonexistent.pid", [], logging.getLogger("test"))
    bans.ban("2001:db8::2")
    time.sleep(0.5)
    assert bans._writer is not None and bans._writer.is_alive()
    (state / nginxban.LIST_NAME).rmdir()
    settled(bans)
    assert listed(state) == ["2001:db8::2"]
