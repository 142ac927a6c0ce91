"""The text of a chat message and what it is about.

The SPEC's texts are built by the programs; here they become what is posted:
the host label (ALERT_HOST_LABEL), invalid UTF-8 repaired to U+FFFD, a text
over the chat service's 40,000 characters cut with a visible marker; and the
identity each message carries to its format (formats.py builds the body).
"""

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ..settings import Settings

TEXT_MAX = 40000
CUT_MARKER = "\n[... cut: the message was longer than 40,000 characters]"


def clean(text: str) -> str:
    """TEXT as valid Unicode (argv's undecodable bytes become U+FFFD), cut to TEXT_MAX."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - len(CUT_MARKER)] + CUT_MARKER
    return text


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


def host_name(configured: str = "") -> str:
    """CONFIGURED (HOST_NAME), else the kernel's host name, else "unknown"."""
    if configured:
        return configured
    import socket

    return socket.gethostname() or "unknown"


def notice(settings: "Settings", monitor: str, condition: str) -> Identity:
    """The identity of a notice (no recovery follows) from MONITOR about CONDITION on this host."""
    return Identity(host_name(settings.host_name), monitor, condition, 0, NOTICE)


def labelled(text: str, label: bool, name: str) -> str:
    """TEXT as posted: `[HOST] TEXT` with ALERT_HOST_LABEL (HOST_NAME, else the kernel's name)."""
    return f"[{host_name(name)}] {text}" if label else text


def as_posted(settings: "Settings", text: str) -> str:
    """TEXT as it will be posted: cleaned, with the host label when ALERT_HOST_LABEL is on."""
    return labelled(clean(text), settings.alert_host_label, settings.host_name)
