"""urlfile.py and urltext.py: the URL file's checks (owner, mode, its KEY=VALUE lines) and NOTIFY_CA_FILE's."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from hostguard import settings, urltext
from hostguard.errors import ConfigError, HostguardError
from hostguard.install import urlfiles
from hostguard.notify import cli, delivery, urlfile

URL = "https://hooks.example.com/services/T000/B000/SENTINELsecret"


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def refused(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        urlfile.read(str(path))
    message = str(caught.value)
    assert "SENTINEL" not in message and str(path) in message
    assert caught.value.code == 78
    return message


@pytest.mark.parametrize("url", [URL, "https://[2001:db8::1]:8443/x?y=1=2", "https://u:p@h.example/a;b=c"])
def test_accepted_files(tmp_path: Path, url: str) -> None:
    path = write(tmp_path / "webhook.conf", f"\nurl={url}\n\n")
    found = urlfile.read(str(path))
    assert found.url == url and found[2:] == ("", "", "slack")
    info = path.stat()
    assert found.identity == f"{info.st_ino}:{info.st_mtime_ns}:{info.st_size}"


def test_refusals(tmp_path: Path) -> None:
    path = tmp_path / "webhook.conf"
    assert "missing or unreadable" in refused(path)
    write(path, f"url={URL}\n", 0o644)
    assert "readable by group or others (mode 644); chmod 600 it" in refused(path)
    not_a_line = "not a url=https://..., format= or routing_key= line (line not shown)"
    for text, why in [
        (f"url={URL}\ninsecure\n", f"line 2: {not_a_line}"),
        (f"url={URL}\n{URL}?x=y\n", f"line 2: {not_a_line}"),
        (f"# the webhook\nurl={URL}\n", f"line 1: {not_a_line}"),
        (f'url = "{URL}"\n', f"line 1: {not_a_line}"),
        (f'url="{URL}"\n', "line 1: url= is refused: not one https:// URL"),
        (f"url={URL} \n", "line 1: url= is refused"),
        (f"url={URL}\r\r\n", "line 1: url= is refused"),
        (f"url={URL}\0\n", "line 1: url= is refused"),
        (f"url={URL.replace('https', 'http')}\n", "line 1: url= is refused: not one https:// URL"),
        (f"url={URL}/x{{a,b}}y[1-2]\n", "line 1: url= is refused"),
        (f"url={URL}é\n", "line 1: url= is refused"),
        (f"url={URL}\nurl={URL}\n", "line 2: a second url= line"),
        ("\n", "holds no url=https://... line"),
    ]:
        write(path, text)
        assert f"webhook file {path} {why}" in refused(path), text
    write(path, "x" * 65537)
    assert "is larger than 65536 bytes" in refused(path)


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    target = write(tmp_path / "real", f"url={URL}\n")
    link = tmp_path / "webhook.conf"
    link.symlink_to(target)
    assert "missing or unreadable" in refused(link)


def test_owner_must_be_the_caller(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    path = write(tmp_path / "webhook.conf", f"url={URL}\n")
    os.chown(path, 64123, -1)
    assert "must be owned by uid 0" in refused(path)


def ca_refusal(ca: str) -> str:
    with pytest.raises(ConfigError) as caught:
        urlfile.check_ca(ca)
    return str(caught.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="the CA rules are root's")
def test_ca_file_rules(tmp_path: Path) -> None:
    urlfile.check_ca("")
    # tmp_path's parents: root's; /tmp is sticky.
    directory = tmp_path / "cadir"
    directory.mkdir(mode=0o755)
    ca = directory / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    ca.chmod(0o644)
    urlfile.check_ca(str(ca))
    ca.chmod(0o664)
    assert ca_refusal(str(ca)) == (
        f"NOTIFY_CA_FILE {ca}: {ca} is writable by a group or by all users: refused"
        " (only root may be able to change the CA bundle)"
    )
    ca.chmod(0o644)
    os.chown(directory, 64123, -1)
    assert f"{directory} belongs to uid 64123, not root: refused" in ca_refusal(str(ca))
    os.chown(directory, 0, -1)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    (open_dir / "ca.pem").symlink_to(ca)
    assert f"{open_dir} is writable by a group or by all users" in ca_refusal(str(open_dir / "ca.pem"))
    open_dir.chmod(0o1777)
    urlfile.check_ca(str(open_dir / "ca.pem"))
    assert ca_refusal(str(tmp_path / "missing.pem")) == f"NOTIFY_CA_FILE {tmp_path}/missing.pem does not exist"


@pytest.mark.skipif(os.geteuid() != 0, reason="the CA rules are root's")
def test_ca_is_read_from_a_checked_descriptor(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("PEM\n")
    assert urlfile.read_ca(str(ca)) == "PEM\n"
    ca.chmod(0o666)
    with pytest.raises(OSError):
        urlfile.read_ca(str(ca))


KEY = "SENTINELsecret0123456789abcdef01"


def test_the_format_and_routing_key_lines_travel_with_the_webhook(tmp_path: Path) -> None:
    path = write(tmp_path / "webhook.conf", f"url={URL}\nformat=discord\n")
    assert urlfile.read(str(path))[2:] == ("discord", "", "discord")
    path = write(path, f"format=pagerduty\nrouting_key={KEY}\nurl=https://events.pagerduty.com/v2/enqueue\n")
    assert urlfile.read(str(path))[2:] == ("pagerduty", KEY, "pagerduty")
    write(path, f"url={URL}\nformat=discord\nformat=slack\n")
    assert "line 3: a second format= line" in refused(path)
    write(path, f"url={URL}\nformat=irc\n")
    assert "line 2: format= is refused: not one of slack, mattermost," in refused(path)
    write(path, f"url={URL}\nrouting_key={KEY}x\n")
    message = refused(path)
    assert "line 2: routing_key= is refused: not 32 letters and digits (value not shown)" in message
    assert "0123456789" not in message
    with pytest.raises(ConfigError, match="line 2: not a url=https://... line"):
        urlfile.read(str(write(tmp_path / "heartbeat.conf", f"url={URL}\nformat=discord\n")), "heartbeat")


@pytest.mark.skipif(os.geteuid() != 0, reason="the CA rules are root's")
@pytest.mark.parametrize("content", [b"garbage\n", b"\x00\x01\x02", b"", b"-----BEGIN CERTIFICATE-----\nab\n"])
def test_a_ca_file_that_holds_no_certificate_is_refused_as_such(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    """A bundle ssl cannot take is a config error (78) saying so, not "cannot read it"; the message stays
    spooled. An empty bundle is refused too (ssl would take the system's CAs instead)."""
    monkeypatch.setattr(delivery, "_spool", None)
    ca = root / "ca.pem"
    ca.write_bytes(content)
    ca.chmod(0o644)
    hook_file = root / "etc/hostguard/webhook.conf"
    hook_file.parent.mkdir(parents=True)
    write(hook_file, f"url={URL}\n")
    loaded = settings.parse(f"NOTIFY_CA_FILE={ca}\n", "hostguard.conf")
    why = f"NOTIFY_CA_FILE {ca}: the file holds no PEM or DER certificate ssl accepts: refused"
    with pytest.raises(ConfigError) as caught:
        urlfile.load(loaded)
    assert str(caught.value) == why
    assert caught.value.code == 78
    assert cli.send_text(loaded, "kept") == 78
    assert why in capsys.readouterr().err
    assert delivery.own_spool(loaded).pending() == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="the CA rules are root's")
def test_a_ca_file_that_cannot_be_read_is_refused_as_such(root: Path) -> None:
    ca = root / "ca"
    ca.mkdir(mode=0o755)
    with pytest.raises(ConfigError) as caught:
        urlfile.tls_context(str(ca))
    assert str(caught.value) == f"NOTIFY_CA_FILE {ca}: cannot read the file (not a regular file): refused"


def stdin_refusal(data: bytes, what: str = "webhook") -> str:
    with pytest.raises(HostguardError) as caught:
        urlfiles.read_url(data, what)
    assert "SENTINEL" not in str(caught.value)
    return str(caught.value)


def test_crlf_lines_read_alike_in_every_form(tmp_path: Path) -> None:
    """A file saved on Windows: one trailing CR per line is no part of the value, for url= lines as for a
    bare URL, in set-webhook as in the notifier; a CR inside a value is still refused."""
    assert urlfiles.read_url(f"{URL}\r\n".encode()).url == URL
    assert urlfiles.read_url(f"url={URL}\r\n".encode()).url == URL
    pagerduty = f"url=https://events.pagerduty.com/v2/enqueue\r\nformat=pagerduty\r\nrouting_key={KEY}\r\n\r\n"
    assert urlfiles.read_url(pagerduty.encode())[1:] == ("pagerduty", KEY, "pagerduty")
    assert urlfile.read(str(write(tmp_path / "webhook.conf", f"url={URL}\r\n"))).url == URL
    assert "control character" in stdin_refusal(f"url={URL}\r\r\n".encode())


@pytest.mark.parametrize(
    ("text", "line"),
    [(f'url = "{URL}"\n', 1), (f"# the team's webhook\nurl={URL}\n", 1), (f"url={URL} \n", 1), (f'url="{URL}"\n', 1),
     (f"url={URL}\n  format=slack\n", 2)],
)  # fmt: skip
def test_the_old_form_comments_and_spaces_are_refused_naming_the_form(text: str, line: int) -> None:
    message = stdin_refusal(text.encode())
    assert message.startswith(f"set-webhook: refused: stdin line {line}: ")
    assert message.endswith("write each line as KEY=VALUE, e.g. url=https://..., without spaces around = or quotes")


def test_no_hint_where_the_form_is_right() -> None:
    assert "KEY=VALUE" not in stdin_refusal(b"colour=red\n")
    assert "KEY=VALUE" not in stdin_refusal(b"url=http://h.example/x\n")


@pytest.mark.parametrize("what", ["webhook", "heartbeat"])
def test_stdin_over_the_file_limit_is_refused_not_cut(monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    """set-webhook and set-heartbeat wrote the first 64 KiB of a longer input, a file the notifier refuses."""
    head = f"url={URL}/"

    def file_text(data: str) -> bytes:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
        return urlfiles.file_text(what)

    fits = head + "a" * (urltext.MAX_BYTES - len(head) - 1) + "\n"
    assert file_text(fits) == fits.encode()
    too_long = f"set-{what}: refused: longer than the URL file's limit of 65536 bytes"
    for data in (fits + "\n", fits[4:-1] + "aaaa"):  # 65537 bytes; a bare URL whose file would be 65537
        with pytest.raises(HostguardError) as caught:
            file_text(data)
        assert str(caught.value) == too_long
