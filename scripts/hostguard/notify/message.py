"""A chat message: its text as posted (the host label, invalid UTF-8 repaired to U+FFFD, cut at
40,000 characters with a visible marker), what it is about (Identity), and the one Message type
that goes from the spool to the format.
"""

from __future__ import annotations

import socket
from typing import NamedTuple

from ..settings import Settings

TEXT_MAX = 40000
CUT_MARKER = "\n[... cut: the message was longer than 40,000 characters]"


def cut(text: str, limit: int) -> str:
    """TEXT cut to LIMIT characters with a visible marker."""
    if len(text) <= limit:
        return text
    marker = f"\n[... cut: the message was longer than {limit:,} characters]"
    return text[: max(0, limit - len(marker))] + marker


def clean(text: str) -> str:
    """TEXT as valid Unicode (argv's undecodable bytes become U+FFFD), cut to TEXT_MAX."""
    return cut(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), TEXT_MAX)


FIRING = "firing"
RESOLVED = "resolved"
NOTICE = "notice"  # the ban tool's and hostguard's own messages: no recovery follows
BANTOOL = "bantool"  # the monitor name of the ban tool's notices


class Identity(NamedTuple):
    """Which alert a message is about: its natural key (host, monitor, condition), its episode (epoch
    seconds it started firing, 0 for none) and its state (FIRING, RESOLVED or NOTICE). Kept with the
    message in the spool, so a format can thread an episode or resolve an incident (formats.py)."""

    host: str
    monitor: str
    condition: str
    episode: int
    state: str


class Message(NamedTuple):
    """One message on its way from the spool to the format: its text as posted, the ban tool's channel (or
    None), what it is about, when it was spooled (epoch seconds); the spool's id and queue (0 for one never
    spooled) and how many spooled messages were merged into it."""

    text: str
    channel: str | None
    identity: Identity
    created: float = 0.0
    id: int = 0
    queue: int = 0
    parts: int = 1


def host_name(configured: str = "") -> str:
    """CONFIGURED (HOST_NAME), else the kernel's host name, else "unknown"."""
    return configured or socket.gethostname() or "unknown"


def notice(settings: Settings, monitor: str, condition: str) -> Identity:
    """The identity of a notice (no recovery follows) from MONITOR about CONDITION on this host."""
    return Identity(host_name(settings.host_name), monitor, condition, 0, NOTICE)


def labelled(text: str, label: bool, name: str) -> str:
    """TEXT as posted: `[HOST] TEXT` with ALERT_HOST_LABEL (HOST_NAME, else the kernel's name)."""
    return f"[{host_name(name)}] {text}" if label else text


def as_posted(settings: Settings, text: str) -> str:
    """TEXT as it will be posted: cleaned, with the host label when ALERT_HOST_LABEL is on."""
    return labelled(clean(text), settings.alert_host_label, settings.host_name)


def sends(fmt: str, identity: Identity) -> bool:
    """Whether FMT gets this message at all: PagerDuty gets no ban-tool notice (a ban has no recovery to
    resolve its incident); any other message (an operator's `text`, hostguard's own) triggers one."""
    return not (fmt == "pagerduty" and identity.state == NOTICE and identity.monitor == BANTOOL)
