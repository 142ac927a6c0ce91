"""The secret URL files (webhook.curlrc, heartbeat.curlrc) and the CA bundle that guards them.

A URL file is root's own (the caller's uid), mode 0600 or stricter, and
holds exactly one `url = "https://..."` line (comments and blank lines
aside) whose URL obeys the one URL rule (settings_table.URL_LINE_RE, the
rule install set-webhook applies). The webhook file may also hold the chat
format (`format = "discord"`; none: detected from the URL's host, else
Slack's) and PagerDuty's `routing_key = "..."`, each once (format_table.py's
line rules): the format travels with the webhook, so a rotation and a format
change are the same write of the same root-only file. Errors name the file, never the URL or
the file's lines. The file's identity (inode, mtime, size) tells a rotated
webhook (install set-webhook writes a new file) from the one the chat
service refused.

NOTIFY_CA_FILE decides which server gets the webhook, so it and every
directory above it, as given and resolved, must be root's and writable by
root only (a sticky directory writable by all, as /tmp, is allowed). Its
content is read here from a checked descriptor and handed to ssl as data, so
the bundle checked is the bundle used.
"""

from __future__ import annotations

import os
import re
import stat
from typing import NamedTuple

from .. import paths
from ..errors import ConfigError
from ..format_table import FORMAT_LINE_RE, ROUTING_KEY_LINE_RE
from ..settings_table import URL_LINE_RE

_MAX_BYTES = 65536
_SKIP = r"[ \t\n\r\f\v]*(#.*)?"
_URLISH = r"[ \t\n\r\f\v]*(--)?url[ \t\n\r\f\v=:]"
_WRITABLE = stat.S_IWGRP | stat.S_IWOTH
_CA_WHY = "(only root may be able to change the CA bundle)"


class UrlFile(NamedTuple):
    """A checked URL file: its URL, its identity `inode:mtime_ns:size`, and (the webhook's) the format
    named in it ("" when none) and PagerDuty's routing key ("" when none)."""

    url: str
    identity: str
    format: str = ""
    routing_key: str = ""


def webhook_path() -> str:
    return paths.under(paths.WEBHOOK_PATH)


def heartbeat_path() -> str:
    return paths.under(paths.HEARTBEAT_PATH)


def _read_own(path: str, what: str) -> tuple[bytes, os.stat_result]:
    """The content of PATH, opened without following a link, if the caller owns it and others cannot read it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        raise ConfigError(f"{what} file {path} is missing or unreadable") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{what} file {path} is missing or unreadable")
        if info.st_uid != os.geteuid():
            raise ConfigError(f"{what} file {path} must be owned by uid {os.geteuid()}")
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise ConfigError(f"{what} file {path} is readable by group or others (mode {mode:o}); chmod 600 it")
        data = os.read(fd, _MAX_BYTES + 1)
    except OSError:
        raise ConfigError(f"{what} file {path} is missing or unreadable") from None
    finally:
        os.close(fd)
    if len(data) > _MAX_BYTES:
        raise ConfigError(f'{what} file {path} may hold only one url = "https://..." line')
    return data, info


def _url_of(line: str) -> str | None:
    """The URL of a `url = "https://..."` line, None when LINE is not one (the rule compiled at first use)."""
    match = re.fullmatch(URL_LINE_RE, line)
    return None if match is None else match.group(2).strip('"')


def read(path: str, what: str = "webhook") -> UrlFile:
    """The URL in PATH (WHAT names it in errors: webhook, heartbeat); ConfigError naming the file if refused."""
    data, info = _read_own(path, what)
    urls: list[str] = []
    extras = {"format": "", "routing_key": ""}
    # Byte-wise, as the bash read it: the rule allows ASCII only.
    for line in data.decode("utf-8", "surrogateescape").split("\n"):
        if re.fullmatch(_SKIP, line):
            continue
        url = _url_of(line)
        if url is not None:
            urls.append(url)
            continue
        if re.match(_URLISH, line):
            raise ConfigError(
                f"{what} URL in {path} is refused: not one https:// URL of the characters"
                " install set-webhook allows (URL not shown)"
            )
        if what == "webhook" and _extra(line, extras, path):
            continue
        raise ConfigError(f'{what} file {path} may hold only one url = "https://..." line{_EXTRAS[what]}')
    if len(urls) != 1:
        raise ConfigError(f'{what} file {path} must hold exactly one url = "https://..." line')
    identity = f"{info.st_ino}:{info.st_mtime_ns}:{info.st_size}"
    return UrlFile(urls[0], identity, extras["format"], extras["routing_key"])


_EXTRAS = {"webhook": ', a format = "..." and a routing_key = "..." line', "heartbeat": ""}


def _extra(line: str, extras: dict[str, str], path: str) -> bool:
    """Takes LINE into EXTRAS when it is a format or routing_key line (each once; the key never shown)."""
    for name, rule in (("format", FORMAT_LINE_RE), ("routing_key", ROUTING_KEY_LINE_RE)):
        match = re.fullmatch(rule, line.strip(" \t\r"))
        if match is None:
            if line.strip().startswith(name):
                raise ConfigError(
                    f"webhook file {path}: its {name} line is refused ({_ALLOWED[name]}; value not shown)"
                )
            continue
        if extras[name]:
            raise ConfigError(f"webhook file {path} holds more than one {name} line")
        extras[name] = match.group(1)
        return True
    return False


_ALLOWED = {"format": "a chat format in double quotes", "routing_key": "32 letters and digits in double quotes"}


def _chain(path: str) -> list[str]:
    """/ and every prefix of absolute PATH, PATH last."""
    found = ["/"]
    current = ""
    for part in path.split("/"):
        if part:
            current += "/" + part
            found.append(current)
    return found


def check_ca(ca: str) -> None:
    """Refuses a CA bundle someone other than root could change (ConfigError naming it and the path at fault)."""
    if not ca:
        return
    try:
        real = _realpath_strict(ca)
    except OSError:
        raise ConfigError(f"NOTIFY_CA_FILE {ca} does not exist") from None
    for path in _chain(ca) + _chain(real):
        try:
            info = os.lstat(path)
        except OSError:
            raise ConfigError(f"NOTIFY_CA_FILE {ca}: cannot check who may write it: refused") from None
        if info.st_uid != 0:
            raise ConfigError(f"NOTIFY_CA_FILE {ca}: {path} belongs to uid {info.st_uid}, not root: refused {_CA_WHY}")
        if stat.S_ISLNK(info.st_mode):
            continue
        sticky_dir = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
        if info.st_mode & _WRITABLE and not sticky_dir:
            raise ConfigError(f"NOTIFY_CA_FILE {ca}: {path} is writable by a group or by all users: refused {_CA_WHY}")


def _realpath_strict(path: str) -> str:
    """os.path.realpath(path, strict=True), which Python 3.9 lacks."""
    real = os.path.realpath(path)
    os.stat(real)
    return real


def read_ca(ca: str) -> str | bytes:
    """The content of the checked CA bundle REAL (PEM text, or DER bytes); OSError when it cannot be read."""
    real = os.path.realpath(ca)
    fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & _WRITABLE:
            raise OSError(f"{ca} changed since it was checked")
        data = os.read(fd, 4 << 20)
    finally:
        os.close(fd)
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return data


def webhook(settings_ca: str, candidate: bool = False) -> UrlFile:
    """The checked webhook (CANDIDATE: the one set-webhook has not put in place yet) and CA bundle
    (ConfigError: exit 78)."""
    hook = read(paths.under(paths.WEBHOOK_CANDIDATE_PATH) if candidate else webhook_path(), "webhook")
    check_ca(settings_ca)
    return hook
