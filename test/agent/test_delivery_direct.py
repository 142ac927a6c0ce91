"""A full disk: an alert that cannot be spooled (not even with the reserve) is posted directly.

The monitors' side of notify.bats's `text` test on a full tmpfs: send_alert
says True only when the direct post was delivered, so the monitor does not
record a lost alert as posted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hostguard import settings
from hostguard.notify import delivery
from hostguard.notify.message import FIRING, Identity
from hostguard.notify.spool import Spool, SpoolFull


@pytest.mark.parametrize(("code", "kept"), [(0, True), (75, False), (77, False), (78, False)])
def test_a_full_spool_posts_the_alert_directly(
    root: Path, monkeypatch: pytest.MonkeyPatch, code: int, kept: bool
) -> None:
    posted: list[tuple[str, Identity]] = []

    def full(self: Spool, text: str, channel: str | None = None, queue: int = 0, about: object = None) -> int:
        raise SpoolFull("database or disk is full")

    def direct(_settings: settings.Settings, text: str, identity: Identity) -> int:
        posted.append((text, identity))
        return code

    monkeypatch.setattr(Spool, "enqueue", full)
    monkeypatch.setattr(delivery, "deliver_direct", direct)
    monkeypatch.setattr(delivery, "_spool", None)
    loaded = settings.parse("ALERT_HOST_LABEL=true\nHOST_NAME=web-1\n", "hostguard.conf")
    about = Identity("web-1", "host", "disk", 1000, FIRING)
    assert delivery.send_alert(loaded, "[Server Alert] \nHigh Disk Usage Detected: 97%", about) is kept
    assert posted == [("[web-1] [Server Alert] \nHigh Disk Usage Detected: 97%", about)]
