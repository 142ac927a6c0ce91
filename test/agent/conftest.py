"""Shared fixtures of the host agent's unit tests: a temporary HOSTGUARD_ROOT."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hostguard import paths, redact
from hostguard.notify import chat, delivery, formats, webhook


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary host root: every hostguard path of the agent under it."""
    monkeypatch.setattr(paths, "ROOT", str(tmp_path))
    redact.forget()
    yield tmp_path
    redact.forget()


@pytest.fixture
def posted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text a delivery run posts, each answered 200 ok: no network, no webhook file, no pace."""
    texts: list[str] = []

    def send(_hook: webhook.Hook, message: formats.Message, _timeout: float) -> chat.Answer:
        texts.append(message.text)
        return chat.Answer(chat.DELIVERED, "HTTP 200 ok", 200, "ok")

    monkeypatch.setattr(delivery, "load_hook", lambda _settings: webhook.Hook("https://hook.test/x", "id", None))
    monkeypatch.setattr(delivery, "send", send)
    monkeypatch.setattr(delivery, "pace", lambda *_args: None)
    return texts
