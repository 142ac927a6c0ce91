"""`set-webhook` and `set-heartbeat`: the secret URL on stdin to its file in /etc/hostguard (root's, 0600),
recorded in part base's manifest; with --verify only once the connectivity test was delivered."""

from __future__ import annotations

import os
import re
import sys

from .. import log, paths
from ..atomicfile import write_new
from ..errors import HostguardError
from ..format_table import FORMAT_LINE_RE, ROUTING_KEY_LINE_RE
from ..notify import formats
from ..settings_table import URL_RE
from . import rotation
from .hostfs import holds, is_file, temp_beside, unlink_if
from .txn import Txn

# The webhook file's lines beside its URL (urlfile.py reads them).
EXTRA_LINES = (("format", FORMAT_LINE_RE), ("routing_key", ROUTING_KEY_LINE_RE))


def read_url(data: bytes, what: str = "webhook") -> tuple[str, str]:
    """The secret URL from the first meaningful line, bare or as a curl config url line, and (the
    webhook's) the format and routing_key lines after it, as the file keeps them (format_table's rules).
    An other line is refused naming its place, never its text."""
    lines = [raw.strip(" \t\r\f\v") for raw in data.decode("utf-8", "surrogateescape").split("\n")]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        return "", ""
    m = re.fullmatch(r'url[ \t\r\f\v]*[=:]?[ \t\r\f\v]*"([^"]*)"', lines[0]) or re.fullmatch(
        r'url[ \t\r\f\v]*[=:]?[ \t\r\f\v]*([^ \t\r\f\v"]+)', lines[0]
    )
    extras = lines[1:]
    kinds = [next((k for k, rule in EXTRA_LINES if re.fullmatch(rule, line)), "") for line in extras]
    if extras and (what != "webhook" or "" in kinds or len(set(kinds)) != len(kinds)):
        raise HostguardError(f'set-{what}: refused: after the URL only one format = "..." and one routing_key ='
                             ' "..." line may follow, for the webhook (value not shown)')  # fmt: skip
    return (m.group(1) if m else lines[0]), "".join(line + "\n" for line in extras)


def check_format(url: str, extras: str) -> None:
    """Refuses a webhook whose format line contradicts its URL's host or whose routing key is amiss, as the
    notifier would read it (formats.checked): never written to fail every delivery."""
    found = {name: m.group(1) for name, rule in EXTRA_LINES for m in re.finditer(rule, extras, re.M)}
    try:
        formats.checked(url, found.get("format", ""), found.get("routing_key", ""))
    except formats.FormatError as error:
        raise HostguardError(f"set-webhook: refused: {error}") from None


def file_text(what: str) -> bytes:
    """The URL file's content from the URL on stdin, checked."""
    url, extras = read_url(sys.stdin.buffer.read(1 << 16), what)
    if not url.isascii() or not re.match(URL_RE, url) or "\n" in url:
        raise HostguardError(f"set-{what}: refused: the {what} must be one https:// URL: a host name or [IPv6]"
                             " address, an optional port, path and query of RFC 3986 characters; no fragment (#),"
                             " quote, space, { } [ ] | ^ ` < > or control character (value not shown)")  # fmt: skip
    if what == "webhook":
        check_format(url, extras)
    return f'url = "{url}"\n{extras}'.encode()


def set_url_file(t: Txn, what: str, dest: str, notifier: str, verify: bool) -> bool:
    """The URL on stdin to DEST; only inside /etc/hostguard (fixed temp name there, then a rename; never
    copied elsewhere, even for undo). With VERIFY that temp file is the candidate the connectivity test of
    NOTIFIER goes to first (rotation.py). False when DEST already held exactly that URL."""
    line = file_text(what)
    if not os.path.isdir(t.host(paths.CONF_PATH)) or not t.installed("base"):
        raise HostguardError(f"set-{what}: {t.host(paths.CONF_PATH)} missing; run install --part base first")
    t.root_dir(paths.CONF_PATH)
    path = t.host(dest)
    if holds(path, line, "600"):
        log.info(f"{what} unchanged")
        return False
    tmp = temp_beside(path)
    write_new(tmp, line, 0o600)
    if verify:
        try:
            rotation.accepted(rotation.post_test(notifier, t.root), is_file(path))
        except BaseException:
            unlink_if(tmp)
            raise
    t.load("base")
    if not any(t.find(k, dest) for k in ("file", "backup", "log")):
        t.step(add=[("file", dest, "-", "")])
    os.replace(tmp, path)
    log.info(f"{what} written to {dest}")
    return True


def remove_heartbeat(t: Txn) -> None:
    if not t.installed("base"):
        return
    t.root_dir(paths.CONF_PATH)
    unlink_if(t.host(paths.HEARTBEAT_PATH))
    t.load("base")
    rec = t.find("file", paths.HEARTBEAT_PATH)
    t.step(drop=[rec.id] if rec else [])
    log.info(f"heartbeat removed: {paths.HEARTBEAT_PATH}")
