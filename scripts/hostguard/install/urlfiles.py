"""`set-webhook` and `set-heartbeat`: the secret URL on stdin to its file in /etc/hostguard (root's, 0600),
recorded in part base's manifest; with --verify only once the connectivity test was delivered."""

from __future__ import annotations

import os
import sys

from .. import log, paths, urltext
from ..atomicfile import write_new
from ..errors import ConfigError, HostguardError
from . import rotation
from .hostfs import holds, is_file, temp_beside, unlink_if
from .txn import Txn


def read_url(data: bytes, what: str = "webhook") -> urltext.UrlText:
    """The URL file's values from DATA (its lines, urltext.py, or a bare URL), checked as the notifier
    reads them (a format its URL's host contradicts or PagerDuty without its key: refused, never
    written to fail every delivery). Refusals name the line or key, never a value."""
    text = data.decode("utf-8", "surrogateescape").lstrip()
    if "://" in text.split("\n", 1)[0].split("=", 1)[0]:
        text = "url=" + text.strip()
    try:
        return urltext.parse(text, "stdin", what)
    except ConfigError as error:
        raise HostguardError(f"set-{what}: refused: {error}") from None


def file_text(what: str) -> bytes:
    """The URL file's content (urltext.text) from what stdin holds, checked; refused when either is over the
    file's limit (urltext.MAX_BYTES: the notifier would refuse the file), never cut."""
    too_long = HostguardError(f"set-{what}: refused: longer than the URL file's limit of {urltext.MAX_BYTES} bytes")
    data = sys.stdin.buffer.read(urltext.MAX_BYTES + 1)
    if len(data) > urltext.MAX_BYTES:
        raise too_long
    content = urltext.text(read_url(data, what)).encode()
    if len(content) > urltext.MAX_BYTES:
        raise too_long
    return content


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
