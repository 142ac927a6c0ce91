"""How a program posts a chat message: spool it, then deliver the spool.

The monitors call `send_alert` for each alert of a run and `flush` once at
the end; the notifier's `text` and `event` verbs use the same two steps. The
delivery itself (the webhook, retries, dead letters) is delivery.py's.
"""

from __future__ import annotations

from . import log
from .message import clean, labelled
from .settings import Settings
from .spool import ALERTS, Spool, SpoolFull, may_hold_messages, spool_dir

_spool: Spool | None = None


def spool(settings: Settings) -> Spool:
    """This process's spool (one SQLite connection per process)."""
    global _spool
    if _spool is None:
        _spool = Spool(settings.notify_spool_max)
    return _spool


def as_posted(settings: Settings, text: str) -> str:
    """TEXT as it will be posted: cleaned, with the host label when ALERT_HOST_LABEL is on."""
    return labelled(clean(text), settings.alert_host_label, settings.host_name)


def send_alert(settings: Settings, text: str) -> bool:
    """Spools TEXT in the alerts queue; True when it is kept (spooled) or was delivered directly.

    When the spool cannot be written even with its reserve (disk full), the
    alert is delivered directly: an alert is never dropped for want of a
    spool. False means it is lost: the caller must not count it as posted.
    """
    posted = as_posted(settings, text)
    try:
        spool(settings).enqueue(posted, None, ALERTS)
        return True
    except SpoolFull:
        log.error(f"cannot write the spool in {spool(settings).directory} (disk full?): delivering this alert directly")
    from .delivery import deliver_direct

    return deliver_direct(settings, posted) == 0


def flush(settings: Settings) -> int:
    """Delivers what is spooled: 0 nothing left, 75 something left, 77 webhook refused, 78 bad webhook file.

    A run that spooled nothing and finds no hint of a waiting message
    (spool.may_hold_messages) ends here, without SQLite or the delivery code.
    """
    if _spool is None and not may_hold_messages(spool_dir()):
        return 0
    from .delivery import flush as deliver_spool

    return deliver_spool(settings, spool(settings))
