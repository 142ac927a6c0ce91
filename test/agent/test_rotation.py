"""`install set-webhook --verify` (rotation.py): the new webhook goes to a root-only candidate file, the
connectivity test to it, and it takes the old one's place only once the service took the test.

The installer runs as a real process in a temporary root with part base installed; the notifier beside it
is a stand-in that records the candidate it was given (its content, owner and mode) and exits with the
status the test sets, so every answer the real one can give is tried. The real notifier's `--test
--candidate` is tried in process: it posts to the candidate and leaves the spool's refusal record alone.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hostguard import paths, settings
from hostguard.notify import answers, delivery
from hostguard.notify import cli as notify
from hostguard.notify.message import Message
from hostguard.notify.urlfile import Hook

Done = subprocess.CompletedProcess[str]
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

OLD = "https://hooks.slack.com/services/T0/B1/SENTINELold"
NEW = "https://hooks.slack.com/services/T0/B2/SENTINELnew"
FAKE_NOTIFIER = """#!/bin/sh
# The stand-in: what it was asked, the candidate's mode, owner and text, then the status the test set.
f="$HOSTGUARD_ROOT/etc/hostguard/.hostguard-tmp.webhook.conf"
{ echo "args $*"; stat -c '%a %u' "$f"; cat "$f"; } >>"$NOTIFIER_LOG"
echo "connectivity test refused: HTTP 404 no_service" >&2
exit "$(cat "$NOTIFIER_STATUS")"
"""


pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the installer runs as root")


def run(
    bundle: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installer of BUNDLE, a real process (as the shim runs it)."""
    return subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", "import sys; sys.path.insert(0, sys.argv[1]);"
         " from hostguard.install import installer; sys.exit(installer.main(sys.argv[2:]))", str(bundle), *args],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
        env=env or {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )  # fmt: skip


def records(root: Path) -> list[tuple[str, ...]]:
    with sqlite3.connect(root / "var/lib/hostguard/install.db") as conn:
        return list(conn.execute("SELECT part, kind, path, a, b FROM record ORDER BY part, id"))


@pytest.fixture
def host(tmp_path: Path) -> tuple[Path, Path]:
    """A bundle with the stand-in notifier, and a root where its part base is installed."""
    bundle = tmp_path / "bundle"
    shutil.copytree(SCRIPTS / "hostguard", bundle / "hostguard", ignore=shutil.ignore_patterns("__pycache__"))
    (bundle / "files.table").write_text("base hostguard.conf /etc/hostguard/hostguard.conf 0644\n")
    (bundle / "hostguard.conf").write_text("SLACK_CHANNEL=ops\n")
    (bundle / "hostguard-notify").write_text(FAKE_NOTIFIER)
    (bundle / "hostguard-notify").chmod(0o755)
    root = tmp_path / "root"
    (root / "run").mkdir(parents=True)
    done = run(bundle, "install", "--root", str(root), "--part", "base")
    assert done.returncode == 0, done.stderr
    return bundle, root


def set_webhook(bundle: Path, root: Path, url: str, status: int, *flags: str) -> subprocess.CompletedProcess[str]:
    (root.parent / "status").write_text(f"{status}\n")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NOTIFIER_LOG": str(root.parent / "notifier.log"),
        "NOTIFIER_STATUS": str(root.parent / "status"),
    }
    return run(bundle, "set-webhook", *flags, "--root", str(root), stdin=f"url={url}\n", env=env)


def hook_file(root: Path) -> str:
    return (root / "etc/hostguard/webhook.conf").read_text()


def posted_to(root: Path) -> str:
    log = root.parent / "notifier.log"
    text = log.read_text() if log.exists() else ""
    log.unlink(missing_ok=True)
    return text


def no_candidate(root: Path) -> bool:
    return not (root / paths.WEBHOOK_CANDIDATE_PATH.lstrip("/")).exists()


def test_the_candidate_is_the_installers_temp_file_beside_the_webhook() -> None:
    from hostguard.install import hostfs

    assert hostfs.temp_beside(paths.WEBHOOK_PATH) == paths.WEBHOOK_CANDIDATE_PATH


def test_a_delivered_test_puts_the_new_webhook_in_place(host: tuple[Path, Path]) -> None:
    bundle, root = host
    first = set_webhook(bundle, root, OLD, 0, "--verify")
    assert first.returncode == 0, first.stderr
    assert "hostguard: connectivity test delivered" in first.stdout
    assert posted_to(root) == f"args --test --candidate\n600 0\nurl={OLD}\n"
    assert hook_file(root) == f"url={OLD}\n" and no_candidate(root)
    again = set_webhook(bundle, root, NEW, 0, "--verify")
    assert again.returncode == 0, again.stderr
    assert posted_to(root) == f"args --test --candidate\n600 0\nurl={NEW}\n"
    assert hook_file(root) == f"url={NEW}\n" and no_candidate(root)
    assert stat.S_IMODE((root / "etc/hostguard/webhook.conf").stat().st_mode) == 0o600


@pytest.mark.parametrize("status", [77, 78, 1])
def test_a_refused_webhook_fails_and_the_old_one_stays(host: tuple[Path, Path], status: int) -> None:
    bundle, root = host
    assert set_webhook(bundle, root, OLD, 0, "--verify").returncode == 0
    posted_to(root)
    refused = set_webhook(bundle, root, NEW, status, "--verify")
    assert refused.returncode == status
    assert f"the new webhook was refused (hostguard-notify --test exit {status}" in refused.stderr
    assert "the host keeps the webhook it had" in refused.stderr
    assert "HTTP 404 no_service" in refused.stderr
    assert "SENTINEL" not in refused.stdout + refused.stderr
    assert posted_to(root).endswith(f"url={NEW}\n")
    assert hook_file(root) == f"url={OLD}\n" and no_candidate(root)
    # The old one set back: it is what the host has, so nothing is written and nothing posted.
    back = set_webhook(bundle, root, OLD, 77, "--verify")
    assert back.returncode == 0 and "webhook unchanged" in back.stdout, back.stderr
    assert posted_to(root) == ""
    # The new one again, once the service takes it.
    retried = set_webhook(bundle, root, NEW, 0, "--verify")
    assert retried.returncode == 0, retried.stderr
    assert hook_file(root) == f"url={NEW}\n"


def test_try_later_keeps_the_old_webhook_but_sets_a_first_one(host: tuple[Path, Path]) -> None:
    bundle, root = host
    first = set_webhook(bundle, root, OLD, 75, "--verify")
    assert first.returncode == 0, first.stderr
    assert "hostguard: connectivity test not delivered (transient failure)" in first.stdout
    assert hook_file(root) == f"url={OLD}\n" and no_candidate(root)
    later = set_webhook(bundle, root, NEW, 75, "--verify")
    assert later.returncode == 75
    assert "was not delivered (a transient failure" in later.stderr and "run the deploy again later" in later.stderr
    assert hook_file(root) == f"url={OLD}\n" and no_candidate(root)


def test_a_refused_first_webhook_leaves_none_and_uninstall_the_root_as_before(host: tuple[Path, Path]) -> None:
    bundle, root = host
    before = records(root)
    refused = set_webhook(bundle, root, NEW, 77, "--verify")
    assert refused.returncode == 77
    assert not (root / "etc/hostguard/webhook.conf").exists() and no_candidate(root)
    assert records(root) == before


def test_without_verify_nothing_is_posted(host: tuple[Path, Path]) -> None:
    bundle, root = host
    done = set_webhook(bundle, root, NEW, 77)
    assert done.returncode == 0, done.stderr
    assert posted_to(root) == "" and hook_file(root) == f"url={NEW}\n"


def test_verify_is_only_for_set_webhook(host: tuple[Path, Path]) -> None:
    bundle, root = host
    assert run(bundle, "set-heartbeat", "--verify", "--root", str(root)).returncode == 64


@pytest.mark.parametrize(("candidate", "refusal_kept"), [(True, False), (False, True)])
def test_the_notifiers_candidate_test_posts_to_it_and_records_no_refusal(
    root: Path, monkeypatch: pytest.MonkeyPatch, candidate: bool, refusal_kept: bool
) -> None:
    conf = root / "etc/hostguard"
    conf.mkdir(parents=True)
    (root / "var/spool/hostguard").mkdir(parents=True)
    for name, url in (("webhook.conf", OLD), (".hostguard-tmp.webhook.conf", NEW)):
        (conf / name).write_text(f"url={url}\n")
        (conf / name).chmod(0o600)
    urls: list[str] = []

    def refuse(hook: Hook, _message: Message, _timeout: float, _spool: object = None) -> answers.Answer:
        urls.append(hook.url)
        return answers.Answer(answers.WEBHOOK, "HTTP 404 no_service", 404, "no_service")

    monkeypatch.setattr(delivery, "post_once", refuse)
    monkeypatch.setattr(delivery, "pace", lambda *_args: None)
    monkeypatch.setattr(delivery, "_spool", None)
    conf_settings = settings.parse("", "hostguard.conf")
    assert notify.connectivity_test(conf_settings, candidate=candidate) == 77
    assert urls == [NEW if candidate else OLD]
    refusal = delivery.own_spool(conf_settings).refusal()
    assert (refusal is not None) == refusal_kept


def test_the_candidates_url_echoed_by_the_service_is_redacted(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A service that refuses the new webhook may echo its path ("Cannot POST /services/..."): the candidate's
    URL is a secret as much as the webhook in place, and its test's lines reach the deploy's output."""
    conf = root / "etc/hostguard"
    conf.mkdir(parents=True)
    (root / "var/spool/hostguard").mkdir(parents=True)
    for name, url in (("webhook.conf", OLD), (".hostguard-tmp.webhook.conf", NEW)):
        (conf / name).write_text(f"url={url}\n")
        (conf / name).chmod(0o600)

    def refuse(_hook: Hook, _message: Message, _timeout: float, _spool: object = None) -> answers.Answer:
        body = "Cannot POST /services/T0/B2/SENTINELnew"
        return answers.Answer(answers.WEBHOOK, f"HTTP 404 {answers.error_text(body)}", 404, body)

    monkeypatch.setattr(delivery, "post_once", refuse)
    monkeypatch.setattr(delivery, "pace", lambda *_args: None)
    monkeypatch.setattr(delivery, "_spool", None)
    assert notify.connectivity_test(settings.parse("", "hostguard.conf"), candidate=True) == 77
    out = capsys.readouterr()
    assert "HTTP 404 Cannot POST" in out.out + out.err
    assert "SENTINELnew" not in out.out + out.err


@pytest.mark.parametrize("what", ["webhook", "heartbeat"])
def test_a_crlf_file_is_taken_and_stdin_over_the_limit_refused(host: tuple[Path, Path], what: str) -> None:
    """The installer as a process: a file saved with CRLF endings is written with LF; a longer stdin than the
    file's 65536 bytes is refused naming the limit, the file in place left as it was (it was cut and written)."""
    bundle, root = host
    done = run(bundle, f"set-{what}", "--root", str(root), stdin=f"url={OLD}\r\n")
    assert done.returncode == 0, done.stderr
    path = root / f"etc/hostguard/{what}.conf"
    assert path.read_text() == f"url={OLD}\n"
    too_long = f"url={NEW}/" + "a" * 65536 + "\n"
    refused = run(bundle, f"set-{what}", "--root", str(root), stdin=too_long)
    assert refused.returncode != 0
    assert f"set-{what}: refused: longer than the URL file's limit of 65536 bytes" in refused.stderr
    assert "SENTINEL" not in refused.stderr + refused.stdout
    assert path.read_text() == f"url={OLD}\n"
