"""Shared fixtures of the host agent's unit tests: a temporary HOSTGUARD_ROOT."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hostguard import paths, redact


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary host root: every hostguard path of the agent under it."""
    monkeypatch.setattr(paths, "ROOT", str(tmp_path))
    redact.forget()
    yield tmp_path
    redact.forget()
