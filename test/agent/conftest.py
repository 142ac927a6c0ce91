"""Shared fixtures of the host agent's unit tests: a temporary HOSTGUARD_ROOT, the monitors' alerts taken in-process
(posts), test/helpers/fake-docker as docker; the installer run as a process from a bundle (run_installer, imported
by the installer's tests)."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hostguard import paths, redact
from hostguard.notify import delivery
from hostguard.notify.answers import DELIVERED, Answer
from hostguard.notify.message import Identity, Message
from hostguard.notify.urlfile import Hook

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
FAKE_DOCKER = Path(__file__).resolve().parents[1] / "helpers" / "fake-docker"
# Runs main() of the installer in the package at argv[1]; with KILL_AFTER=N it kills itself with KILL_SIGNAL once
# the Nth step of the store committed; it prints how many steps committed on stderr at the end.
INSTALLER_RUNNER = """
import os, sys
sys.path.insert(0, sys.argv[1])
from hostguard.install import installer, txnstore
kill_after, kill_signal = int(os.environ["KILL_AFTER"]), int(os.environ["KILL_SIGNAL"])
done = [0]
step = txnstore.Store.step
def counted(self, *args, **kwargs):
    out = step(self, *args, **kwargs)
    done[0] += 1
    if done[0] == kill_after:
        os.kill(os.getpid(), kill_signal)
    return out
txnstore.Store.step = counted
code = installer.main(sys.argv[2:])
sys.stderr.write(f"steps {done[0]}\\n")
sys.exit(code)
"""


def agent_bundle(where: Path) -> Path:
    """WHERE as a bundle holding the agent's package (the test adds its files.table and files)."""
    shutil.copytree(SCRIPTS / "hostguard", where / "hostguard", ignore=shutil.ignore_patterns("__pycache__"))
    return where


def run_installer(bundle: Path, *args: str, kill_after: int = 0, sig: int = 9) -> subprocess.CompletedProcess[str]:
    """A real `install` process (the module's main in a child interpreter, as the shim runs it) from BUNDLE."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KILL_AFTER": str(kill_after), "KILL_SIGNAL": str(sig)}
    return subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", INSTALLER_RUNNER, str(bundle), *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def installer_steps(result: subprocess.CompletedProcess[str]) -> int:
    """How many steps of the store the run committed (from its last stderr line)."""
    return int(result.stderr.rsplit("steps ", 1)[1].split()[0])


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

    def post_once(_hook: Hook, message: Message, _timeout: float, _spool: object = None) -> Answer:
        texts.append(message.text)
        return Answer(DELIVERED, "HTTP 200 ok", 200, "ok")

    hook = Hook("https://hook.test/x", "id", ssl.create_default_context())
    monkeypatch.setattr(delivery, "load_hook", lambda _settings: hook)
    monkeypatch.setattr(delivery, "post_once", post_once)
    monkeypatch.setattr(delivery, "pace", lambda *_args: None)
    return texts


@pytest.fixture
def docker(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """fake-docker on PATH as docker, its calls logged; its containers file (the test writes it)."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").symlink_to(FAKE_DOCKER)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    state = root / "containers.json"
    monkeypatch.setenv("FAKE_DOCKER_STATE", str(state))
    monkeypatch.setenv("FAKE_DOCKER_CALLS", str(root / "calls.jsonl"))
    monkeypatch.setenv("HOSTGUARD_NOW", "1000")
    (root / "etc/hostguard").mkdir(parents=True)
    return state


class Posts:
    """What a monitor's run handed to delivery, and what delivery answers (kept, the spool flush's status)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.identities: list[Identity] = []
        self.kept = True
        self.flush_status = 0

    def take(self) -> list[str]:
        texts, self.texts = self.texts, []
        return texts


@pytest.fixture
def posts(monkeypatch: pytest.MonkeyPatch) -> Posts:
    """The monitors' alerts, taken in-process: no spool, no network."""
    stub = Posts()

    def send_alert(_settings: object, text: str, identity: Identity) -> bool:
        stub.texts.append(text)
        stub.identities.append(identity)
        return stub.kept

    monkeypatch.setattr(delivery, "send_alert", send_alert)
    monkeypatch.setattr(delivery, "flush_spool", lambda _settings: stub.flush_status)
    return stub
