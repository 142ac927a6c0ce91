"""The delivery lock's hand-off (delivery.flush_holding): a writer commits, then
tries the lock without waiting and starts no delivery when it is held; the run
that holds it looks at the spool after its release. A message spooled at the
worst moment, just before the release, is delivered by that run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hostguard import settings
from hostguard.notify import delivery
from hostguard.notify.spool import EVENTS, Spool


def test_a_message_spooled_just_before_the_release_is_delivered(
    root: Path, monkeypatch: pytest.MonkeyPatch, posted: list[str]
) -> None:
    real_close = os.close
    found_taken: list[bool] = []

    def close(fd: int) -> None:
        # The run releases the delivery lock: first a writer commits and finds it taken.
        if not found_taken and os.readlink(f"/proc/self/fd/{fd}").endswith("/.lock"):
            found_taken.append(False)
            writer = Spool(100)
            writer.enqueue("spooled while the run ends", None, EVENTS)
            found_taken[0] = writer.try_lock(0.0) is None
            writer.close()
        real_close(fd)

    monkeypatch.setattr(os, "close", close)
    box = Spool(100)
    box.enqueue("first", None, EVENTS)
    assert delivery.flush(settings.parse("", "hostguard.conf"), box) == 0
    monkeypatch.setattr(os, "close", real_close)
    assert found_taken == [True], "the writer found the lock taken and started no delivery"
    assert posted == ["first", "spooled while the run ends"]
    assert box.pending() == 0
