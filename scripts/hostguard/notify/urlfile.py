"""The secret URL files (webhook.conf, heartbeat.conf) and the CA bundle that guards them,
loaded once per run as a Hook: `load`, the one loader of the notifier and the heartbeat.

A URL file is root's own (the caller's uid), mode 0600 or stricter, read from a descriptor
opened without following a link, and holds `KEY=VALUE` lines (urltext.py: `url=`, and the
webhook's `format=` and `routing_key=`). Errors name the file and line, never a value. The
file's identity (inode, mtime, size) tells a rotated webhook (install set-webhook writes a new
file) from the one the chat service refused.

NOTIFY_CA_FILE decides which server gets the webhook, so it and every
directory above it, as given and resolved, must be root's and writable by
root only (a sticky directory writable by all, as /tmp, is allowed). Its
content is read here from a checked descriptor and handed to ssl as data, so
the bundle checked is the bundle used.
"""

from __future__ import annotations

import os
import ssl
import stat
from typing import NamedTuple

from .. import paths, urltext
from ..errors import ConfigError
from ..settings import Settings

_WRITABLE = stat.S_IWGRP | stat.S_IWOTH
_CA_WHY = "(only root may be able to change the CA bundle)"


class UrlFile(NamedTuple):
    """A checked URL file: its URL, its identity `inode:mtime_ns:size`, and (the webhook's) the format
    named in it ("" when none), PagerDuty's routing key ("" when none) and its chat format."""

    url: str
    identity: str
    format: str = ""
    routing_key: str = ""
    chat: str = ""


class Hook(NamedTuple):
    """A loaded URL file: its URL and identity, the TLS context that checks its server (NOTIFY_CA_FILE's
    bundle, else the system's CAs), the webhook's chat format and PagerDuty's routing key ("" else)."""

    url: str
    identity: str
    context: ssl.SSLContext
    format: str = "slack"
    key: str = ""


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
        data = os.read(fd, urltext.MAX_BYTES + 1)
    except OSError:
        raise ConfigError(f"{what} file {path} is missing or unreadable") from None
    finally:
        os.close(fd)
    if len(data) > urltext.MAX_BYTES:
        raise ConfigError(f"{what} file {path} is larger than {urltext.MAX_BYTES} bytes")
    return data, info


def read(path: str, what: str = "webhook") -> UrlFile:
    """The URL file PATH, checked (WHAT names it in errors: webhook, heartbeat); ConfigError naming the file."""
    data, info = _read_own(path, what)
    found = urltext.parse(data.decode("utf-8", "surrogateescape"), f"{what} file {path}", what)
    identity = f"{info.st_ino}:{info.st_mtime_ns}:{info.st_size}"
    return UrlFile(found.url, identity, found.format, found.routing_key, found.chat)


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
        if not stat.S_ISREG(info.st_mode):
            raise OSError("not a regular file")
        if info.st_uid != 0 or info.st_mode & _WRITABLE:
            raise OSError("changed since it was checked")
        data = os.read(fd, 4 << 20)
    finally:
        os.close(fd)
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return data


def load(settings: Settings, what: str = "webhook", candidate: bool = False) -> Hook:
    """The checked URL file WHAT (webhook, heartbeat; CANDIDATE: the webhook set-webhook has not put in
    place yet) and CA bundle, with the TLS context made of it; ConfigError (exit 78) naming the file."""
    if what == "heartbeat":
        path = heartbeat_path()
    else:
        path = paths.under(paths.WEBHOOK_CANDIDATE_PATH) if candidate else webhook_path()
    found = read(path, what)
    ca = settings.notify_ca_file
    return Hook(found.url, found.identity, tls_context(ca), found.chat or "slack", found.routing_key)


def tls_context(ca: str) -> ssl.SSLContext:
    """The TLS context that checks the server: the checked bundle CA, else ("") the system's CAs.
    ConfigError (exit 78: the operator fixes the file; what is spooled stays) naming NOTIFY_CA_FILE,
    the file, and whether it could not be read or holds no certificate ssl accepts."""
    check_ca(ca)
    if not ca:
        return ssl.create_default_context()
    try:
        cadata = read_ca(ca)
    except OSError as error:
        raise ConfigError(f"NOTIFY_CA_FILE {ca}: cannot read the file ({error.strerror or error}): refused") from None
    try:
        if not cadata:
            raise ValueError("empty")
        return ssl.create_default_context(cadata=cadata)
    except (ssl.SSLError, ValueError):
        raise ConfigError(
            f"NOTIFY_CA_FILE {ca}: the file holds no PEM or DER certificate ssl accepts: refused"
        ) from None
