"""The ban tool's messages: their texts (SPEC, Events) and how they are spooled.

`BanNotices` is what the fail2ban Python action (fail2ban/action.d/slack-notify.py) calls inside
fail2ban's process. A message is committed to the spool (queue EVENTS) before the call returns; a ban
starts no process, but when the delivery lock is free and a run could post (FlushGate), one detached
`hostguard-notify flush --detached`. Nothing waits for the chat service. A message that cannot be kept
raises (SpoolFull, logged as LOST through fail2ban's logger), so fail2ban logs the action as failed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import re
import sqlite3
import subprocess
import threading
import time

from .. import log, paths
from ..errors import HostguardError, UsageError
from ..settings import Settings, load
from ..settings_table import PATTERNS
from . import urlfile
from .message import BANTOOL, as_posted, notice
from .spool import EVENTS, STARTING, Spool, SpoolFull, spool_dir
from .urlfile import Hook, webhook_path
from .webhook import progress

_IP_CHARS = frozenset("0123456789abcdefABCDEF.:/")
# A ban waits at most this long for another process's spool transaction (they take milliseconds).
BAN_BUSY_SECONDS = 2.0
# fail2ban's stop waits at most this long for the stop message (its bans are lifted meanwhile).
STOP_SECONDS = 5.0
FLUSH_LOG = ".flush.log"
# The notifier beside this package (as installed: /usr/local/lib/hostguard/hostguard-notify).
NOTIFIER = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "hostguard-notify"
)


def valid_ip(ip: str) -> bool:
    """An address or an address with a /prefix, as fail2ban's <ip> can be (no scope, no name)."""
    if not ip or not set(ip) <= _IP_CHARS:
        return False
    try:
        if "/" in ip:
            ipaddress.ip_network(ip, strict=False)
        else:
            ipaddress.ip_address(ip)
    except ValueError:
        return False
    return True


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def event_text(settings: Settings, kind: str, found: dict[str, str]) -> tuple[str, str | None]:
    """The SPEC's text of event KIND (and the channel of start/stop); UsageError when an option is wrong."""
    jail = found.get("jail", "")
    if not jail or any(char < " " or char == "\x7f" for char in jail):
        raise UsageError("--jail NAME is required")
    if kind in ("start", "stop"):
        channel = found.get("channel", "")
        channel = channel[1:] if channel.startswith("#") else channel
        channel = channel or settings.slack_channel
        if not re.fullmatch(PATTERNS["SLACK_CHANNEL"], channel) or not channel.isascii():
            raise UsageError("invalid --channel")
        return f"Ban tool ({jail}) jail has {'started' if kind == 'start' else 'stopped'}", channel
    if kind not in ("ban", "unban"):
        raise UsageError(f"unknown event {kind}")
    ip = found.get("ip", "")
    if not valid_ip(ip):
        raise UsageError("--ip IP is required")
    if kind == "unban":
        return f"Ban Alert({jail})\n Unbanned IP: *{ip}*", None
    failures, when = found.get("failures", ""), found.get("time", "")
    if not _digits(failures):
        raise UsageError("--failures N is required")
    # A manual banip gives a fractional time; the message shows whole seconds.
    when, dot, fraction = when.partition(".")
    if not _digits(when) or (dot and not _digits(fraction)):
        raise UsageError("--time UNIX is required")
    return f"Ban Alert({jail})\n Banned IP: *{ip}*\n Failures: {failures} failure(s)\n Timestap: {when}", None


def spool_event(settings: Settings, spool: Spool, kind: str, found: dict[str, str]) -> bool:
    """Spools the message of event KIND in one transaction; True when the delivery lock was free (the
    caller starts a flush). SpoolFull when it cannot be kept; UsageError when a value is refused."""
    text, channel = event_text(settings, kind, found)
    spool.spool_max = settings.notify_spool_max
    try:
        spool.enqueue(as_posted(settings, text), channel, EVENTS, notice(settings, BANTOOL, f"{kind} {found['jail']}"))
    except SpoolFull as error:
        log.error(
            f"cannot write the spool in {spool.directory} ({error}): this ban-tool message is LOST"
            " (not kept, not sent: a ban never waits for the chat service)"
        )
        raise
    # Committed first, then the lock tried without waiting: when a delivery run
    # holds it, that run looks at the spool after its release (delivery.flush).
    return spool.lock_free()


def start_flush() -> subprocess.Popen[bytes]:
    """One detached `hostguard-notify flush --detached`, in a session of its own, with none of the
    caller's descriptors; its output in the spool's .flush.log."""
    directory = spool_dir()
    try:
        out = os.open(os.path.join(directory, FLUSH_LOG), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError:
        out = subprocess.DEVNULL
    try:
        return subprocess.Popen(
            # At a lower priority than fail2ban: on a busy host its start-up (Python, TLS) does not slow bans.
            ["nice", "-n", "10", NOTIFIER, "flush", "--detached"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as error:
        # Spooled all the same: the next run (a monitor's, the next ban's) delivers it.
        raise HostguardError(f"spooled, but cannot start {NOTIFIER} flush: {error.strerror}") from None
    finally:
        if out != subprocess.DEVNULL:
            os.close(out)


class SettingsFile:
    """hostguard.conf, parsed again only when the file changed (its identity: _stamp)."""

    def __init__(self) -> None:
        self._key = ""
        self._settings: Settings | None = None

    def get(self) -> Settings:
        key = _stamp(paths.under(paths.SETTINGS_PATH))
        if self._settings is None or key != self._key:
            self._settings = load()
            self._key = key
        return self._settings


class FlushGate:
    """Whether a flush started now can make progress (webhook.progress): the webhook file checked once per
    change of it (its identity, with the CA file's), the refusal read from the spool at each ban. A closed
    gate is logged once; the messages wait in the spool for the next ban, monitor run or `flush`."""

    def __init__(self) -> None:
        self._key: tuple[str, ...] | None = None
        self._hook: Hook | None = None
        self._why = ""

    def _current(self, settings: Settings) -> Hook | None:
        key = tuple(_stamp(path) for path in (webhook_path(), settings.notify_ca_file) if path)
        if key != self._key:
            try:
                self._hook = urlfile.load(settings)
            except (HostguardError, OSError, ValueError):
                self._hook = None
            self._key = key
        return self._hook

    def open(self, settings: Settings, spool: Spool) -> bool:
        why = progress(settings, spool, self._current(settings))
        if why and why != self._why:
            log.warn(f"ban-tool messages wait in the spool, no delivery run started: {why}")
        self._why = why
        return not why


def _stamp(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return f"{path}:missing"
    # ctime too: `chmod 600` / `chown`, the fix a refused file's error names, change nothing else.
    return f"{path}:{info.st_ino}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_size}"


class BanNotices:
    """The ban tool's four messages, spooled from inside fail2ban's process (slack-notify.py).

    Every method raises HostguardError (or SpoolFull) when the message could
    not be kept, so fail2ban logs the action as failed.
    """

    def __init__(self, channel: str, logger: logging.Logger | None = None) -> None:
        """LOGGER: fail2ban's, which then gets every line hostguard's code writes in this process."""
        if logger is not None:
            log.to_logger(logger)
        self.channel = channel
        self._flush: subprocess.Popen[bytes] | None = None
        # One connection for the action's life (fail2ban may call from its command thread too: the lock).
        self._box = Spool(0, busy=BAN_BUSY_SECONDS, long_lived=True)
        self._lock = threading.Lock()
        self._gate = FlushGate()
        self._settings = SettingsFile()

    def start(self, jail: str) -> None:
        self._spool("start", {"jail": jail, "channel": self.channel})

    def stop(self, jail: str, budget: float = STOP_SECONDS) -> None:
        """The stop message, delivered before fail2ban ends: its service manager kills every process
        fail2ban started when it stops (setsid or not), so this waits, within BUDGET seconds in all, for
        the flush it started last (it takes the message: the hand-off), then runs one in the foreground.
        A chat service that hangs holds fail2ban's stop no longer: the message then waits in the spool."""
        with self._lock:
            settings = self._settings.get()
            spool_event(settings, self._box, "stop", {"jail": jail, "channel": self.channel})
            self._box.close()
        seconds = budget
        deadline = time.monotonic() + seconds
        if self._flush is not None and self._flush.poll() is None:
            try:
                self._flush.wait(seconds)
            except subprocess.TimeoutExpired:
                self._flush.kill()  # what it had claimed goes back at the next run
                self._flush.wait()
        try:
            subprocess.run(
                [NOTIFIER, "flush"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=max(0.1, deadline - time.monotonic()),
                check=False,
            )
        except subprocess.TimeoutExpired:
            log.warn(f"the ban tool's stop message was not delivered within {seconds:.0f} s: it waits in the spool")

    def ban(self, jail: str, ip: str, failures: str, when: str) -> None:
        self._spool("ban", {"jail": jail, "ip": ip, "failures": failures, "time": when})

    def unban(self, jail: str, ip: str) -> None:
        self._spool("unban", {"jail": jail, "ip": ip})

    def _spool(self, kind: str, found: dict[str, str]) -> None:
        with self._lock:
            settings = self._settings.get()
            if (
                spool_event(settings, self._box, kind, found)
                and not self._starting()
                and self._gate.open(settings, self._box)
            ):
                self._flush = start_flush()
                with contextlib.suppress(sqlite3.Error, OSError):  # not written: the next ban may start one more
                    self._box.put(STARTING, str(self._flush.pid))

    def _starting(self) -> bool:
        """Whether the flush this action started last is alive and has not yet taken the delivery lock
        (it clears STARTING when it has): it delivers what is spooled now, so no other is started."""
        flush = self._flush
        return flush is not None and flush.poll() is None and self._box.get(STARTING) == str(flush.pid)
