"""The spool's answers where a review found holes (issue 31): a message gone
without a trace is not "delivered"; a database that is not this spool is set
aside and a new one made; the bound holds in bytes; the Python action's
stop message is delivered before it returns; a scoped address never reaches
nginx's list."""

from __future__ import annotations

import json
import os
import sqlite3
import ssl
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from hostguard import settings
from hostguard.ban import nginxban
from hostguard.notify import answers, delivery, events, formats, spoolbound, urlfile
from hostguard.notify import cli as notify
from hostguard.notify.message import BANTOOL, FIRING, NOTICE, RESOLVED, Identity, Message
from hostguard.notify.spool import ALERTS, EVENTS, STARTING, Refusal, Spool
from hostguard.notify.spooldb import SCHEMA_VERSION
from hostguard.notify.urlfile import Hook

CONTEXT = ssl.create_default_context()


def spool_dir(root: Path) -> Path:
    return root / "var/spool/hostguard"


def test_a_dead_letter_the_bound_let_go_is_not_reported_delivered(tmp_path: Path) -> None:
    box = Spool(1, str(tmp_path))
    first = box.enqueue("refused one")
    claimed = box.claim_next()
    assert claimed is not None and claimed.id == first
    box.bury(first, "HTTP 400 invalid_payload")
    assert box.outcome(first) == "dead"
    second = box.enqueue("refused two")
    assert box.claim_next() is not None
    box.bury(second, "HTTP 400 invalid_payload")  # the bound (1) lets the first dead letter go
    assert [letter.id for letter in box.dead_letters()] == [second]
    assert box.outcome(first) == "unknown"
    third = box.enqueue("fine")
    assert box.claim_next() is not None
    box.delivered(third)
    assert box.outcome(third) == "delivered"


def test_text_exits_non_zero_for_a_message_gone_without_a_trace(
    root: Path, posted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(_hook: Hook, message: Message, _timeout: float, _spool: object = None) -> answers.Answer:
        posted.append(message.text)
        return answers.Answer(answers.MESSAGE, "HTTP 400 invalid_payload", 400, "invalid_payload")

    monkeypatch.setattr(delivery, "post_once", refuse)
    # The dead-letter bound (1) lets each refused message go as soon as the next one dies.
    loaded = settings.parse("NOTIFY_SPOOL_MAX=1\n", "test")
    original = delivery._bury

    def bury_twice(box: Spool, message_id: int, why: str) -> None:
        original(box, message_id, why)
        other = box.enqueue("another refused one")
        claimed = box.claim_next()
        assert claimed is not None
        original(box, other, why)

    monkeypatch.setattr(delivery, "_bury", bury_twice)
    assert notify.send_text(loaded, "refused") == 77
    assert posted == ["refused"]


def test_a_database_that_is_not_the_spool_is_set_aside_and_a_new_one_made(tmp_path: Path) -> None:
    path = tmp_path / "spool.db"
    path.write_bytes(b"not a database at all\n" * 100)
    box = Spool(10, str(tmp_path))
    ban = box.enqueue("Ban Alert(j)\n Unbanned IP: *192.0.2.1*", None, EVENTS)
    aside = [name for name in os.listdir(tmp_path) if name.startswith("spool.db.bad-")]
    assert len(aside) == 1
    assert (tmp_path / aside[0]).read_bytes() == b"not a database at all\n" * 100
    first = box.claim_next()
    assert first is not None and first.queue == ALERTS
    assert "could not be used" in first.text and aside[0] in first.text
    box.delivered(first.id)
    second = box.claim_next()
    assert second is not None and second.id == ban


def test_a_database_of_another_version_or_program_is_set_aside(tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "spool.db")
    other.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    other.execute("CREATE TABLE message (x)")
    other.commit()
    other.close()
    box = Spool(10, str(tmp_path))
    box.enqueue("alert")
    assert box.pending() == 2  # the set-aside notice and the alert
    assert [n for n in os.listdir(tmp_path) if n.startswith("spool.db.bad-") and not n.endswith(("-wal", "-shm"))]


def test_two_processes_opening_a_new_spool_at_once_set_nothing_aside(tmp_path: Path) -> None:
    first, second = Spool(10, str(tmp_path)), Spool(10, str(tmp_path))
    first.enqueue("one")
    second.enqueue("two")
    assert first.pending() == 2
    assert not [n for n in os.listdir(tmp_path) if ".bad-" in n]


@pytest.mark.parametrize("queue", [ALERTS, EVENTS])
def test_the_bound_holds_in_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, queue: int) -> None:
    monkeypatch.setattr(spoolbound, "BYTES_MAX", 200_000)
    box = Spool(10_000, str(tmp_path))
    for i in range(60):
        box.enqueue(f"{i} " + "é" * 10_000, None, queue)  # 20 KB a message in UTF-8
        count, size = spoolbound.waiting(box.db(), queue)
        assert size <= 200_000, (i, count, size)
    parts = box.db().execute("SELECT coalesce(sum(parts), 0) FROM message WHERE merged_into IS NULL").fetchone()[0]
    if queue == ALERTS:
        assert (parts, box.dropped()) == (60, 0)  # merged, never dropped
    else:
        assert parts + box.dropped() == 60 and box.dropped() > 0


def test_a_scoped_or_odd_address_is_refused_before_the_list_is_written() -> None:
    for bad in ("fe80::1%eth0", "fe80::1%25x", "192.0.2.1%x", "\uff11\uff19\uff12.0.2.1"):
        with pytest.raises(nginxban.Refused, match="not an IP address"):
            nginxban.entry(bad)
    assert not events.valid_ip("fe80::1%eth0")


def test_the_stop_message_is_delivered_before_stop_returns(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """stop() runs the flush in the foreground: when it returns, the service manager may kill everything."""
    calls: list[list[str]] = []

    def run(argv: list[str], **_kwargs: object) -> subprocess.CompletedProcess[bytes]:
        calls.append(argv)
        box = Spool(10, str(spool_dir(root)))
        message = box.claim_next()
        assert message is not None and message.text == "Ban tool (j) jail has stopped"
        box.delivered(message.id)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", run)
    events.BanNotices("ops").stop("j")
    assert calls == [[events.NOTIFIER, "flush"]]
    assert Spool(10, str(spool_dir(root))).pending() == 0


def test_the_ban_actions_connection_follows_a_database_set_aside_by_another_process(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events, "start_flush", lambda: subprocess.Popen(["true"]))
    notices = events.BanNotices("ops")
    notices.unban("j", "192.0.2.1")
    directory = spool_dir(root)
    # Another process found it unusable and set it aside (as Spool.db does), then made a new one.
    os.replace(directory / "spool.db", directory / "spool.db.bad-test")
    Spool(10, str(directory)).enqueue("alert")
    notices.unban("j", "192.0.2.2")
    texts = [r[0] for r in sqlite3.connect(directory / "spool.db").execute("SELECT text FROM message ORDER BY id")]
    assert texts == ["alert", "Ban Alert(j)\n Unbanned IP: *192.0.2.2*"]


def test_a_database_found_corrupt_by_a_write_is_set_aside_and_the_message_kept(tmp_path: Path) -> None:
    box = Spool(10, str(tmp_path))
    for i in range(200):
        box.enqueue(f"alert {i} " + "x" * 500)
    box.close()
    path = tmp_path / "spool.db"
    data = bytearray(path.read_bytes())
    data[3 * 4096 :] = b"\xff" * (len(data) - 3 * 4096)  # the header and the first pages open; the rest is garbage
    path.write_bytes(bytes(data))
    for leftover in ("spool.db-wal", "spool.db-shm"):
        (tmp_path / leftover).unlink(missing_ok=True)
    box = Spool(10, str(tmp_path))
    box.enqueue("after the corruption")
    texts = [r[0] for r in box.db().execute("SELECT text FROM message ORDER BY id")]
    assert "could not be used" in texts[0] and texts[-1] == "after the corruption", texts
    assert [n for n in os.listdir(tmp_path) if n.startswith("spool.db.bad-") and n[-4:] not in ("-wal", "-shm")]


def test_two_openers_that_found_the_same_foreign_file_move_it_once_and_never_a_new_spool(tmp_path: Path) -> None:
    (tmp_path / "spool.db").write_bytes(b"not a database\n" * 50)
    found = (tmp_path / "spool.db").stat().st_ino
    first, second = Spool(10, str(tmp_path)), Spool(10, str(tmp_path))
    first._set_aside("found by the first", found)
    first.enqueue("first's alert")
    # The second found the same file unusable before the first moved it: the file at the name is new, left alone.
    second._set_aside("found by the second", found)
    second.enqueue("second's alert")
    aside = sorted(n for n in os.listdir(tmp_path) if n.startswith("spool.db.bad-") and n[-4:] not in ("-wal", "-shm"))
    assert len(aside) == 1 and (tmp_path / aside[0]).read_bytes() == b"not a database\n" * 50
    texts = [r[0] for r in first.db().execute("SELECT text FROM message ORDER BY id")]
    assert texts[1:] == ["first's alert", "second's alert"] and "found by the first" in texts[0]


def test_alerts_merged_at_the_bound_about_different_alerts_go_as_one_firing_alert(tmp_path: Path) -> None:
    """A resolution merged with another alert must not travel as that resolution (PagerDuty would send a
    resolve without its text), nor a firing alert merged into a notice be skipped as one."""
    box = Spool(2, str(tmp_path))
    resolved = Identity("web-1", "host", "cpu", 1000, RESOLVED)
    box.enqueue("cpu back to normal", None, ALERTS, resolved)
    box.enqueue("disk 99%", None, ALERTS, Identity("web-1", "host", "disk", 2000, FIRING))
    box.enqueue("memory 99%", None, ALERTS, Identity("web-1", "host", "memory", 3000, FIRING))
    first = box.claim_next()
    assert first is not None and first.text == "cpu back to normal\n\ndisk 99%"
    assert first.identity[1:3] == ("hostguard", "merged") and first.identity.state == FIRING
    second = box.claim_next()
    assert second is not None and second.identity == Identity("web-1", "host", "memory", 3000, FIRING)


def test_ban_tool_notices_merged_in_a_burst_stay_notices(tmp_path: Path) -> None:
    box = Spool(1000, str(tmp_path))
    for i in range(spoolbound.BURST):
        box.enqueue(f"ban {i}", None, EVENTS, Identity("web-1", BANTOOL, f"ban j{i}", 0, NOTICE))
    merged = box.claim_next()
    assert merged is not None and merged.parts == spoolbound.BURST
    assert merged.identity == Identity("web-1", BANTOOL, "ban j0", 0, NOTICE)


@pytest.mark.parametrize("fmt", ["discord", "pagerduty", "googlechat", "mattermost", "teams"])
def test_alerts_merged_at_the_bound_are_posted_whole_within_the_formats_limit(
    root: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Issue 43 item 4: alerts merged at the bound (30,000 characters whatever the format) were cut
    at Discord's 2,000 and recorded as delivered. Each alert now reaches the service whole, in pieces
    within the format's limit, and only then is the message delivered."""
    shown: list[str] = []
    limit = formats.FORMATS[fmt].text_limit

    def send(hook: Hook, message: Message, _timeout: float, _spool: object = None) -> answers.Answer:
        body = formats.request(fmt, hook.url, hook.key, message).body
        assert len(body) < 2 * limit + 2000
        shown.append(body.decode("utf-8"))
        return answers.Answer(answers.DELIVERED, "HTTP 200 ok", 200, "ok")

    hook = Hook("https://hook.test/x", "id", CONTEXT, fmt, "k" * 32 if fmt == "pagerduty" else "")
    monkeypatch.setattr(delivery, "load_hook", lambda _settings: hook)
    monkeypatch.setattr(delivery, "post_once", send)
    monkeypatch.setattr(delivery, "pace", lambda *_args: None)
    box = Spool(1)
    alerts = [f"[Server Alert] alert {i:02d}: " + "disk /var 99% full. " * 14 for i in range(20)]
    ids = [
        box.enqueue(text, None, ALERTS, Identity("web-1", "host", f"disk{i}", 1000, FIRING))
        for i, text in enumerate(alerts)
    ]
    assert box.pending() == 1, "the bound merged them into one message"
    assert delivery.flush(settings.parse("", "hostguard.conf"), box) == 0
    assert "cut:" not in "".join(shown), "a piece was cut by the format"
    for text in alerts:
        assert sum(json_text(body).count(text) for body in shown) == 1, f"{text[:20]} not posted once, whole"
    assert [box.outcome(i) for i in ids] == ["delivered"] * 20


def json_text(body: str) -> str:
    """The text in a request body, whatever the format: every string in its JSON (Slack's form decoded)."""
    if body.startswith("payload="):
        body = parse_qs(body)["payload"][0]
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(json.loads(body))
    return "\n".join(found)


def test_a_ban_starts_a_flush_only_when_one_can_make_progress(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43 item 6: with the webhook refused or missing, every ban started a flush from fail2ban's
    process (483 of 500 refused, 500 without a file). Now none while nothing can be posted."""
    started: list[int] = []

    def start_flush() -> subprocess.Popen[bytes]:
        started.append(1)
        return subprocess.Popen(["true"])  # ended at once: the next ban may start another

    monkeypatch.setattr(events, "start_flush", start_flush)
    notices = events.BanNotices("ops")

    def bans(count: int) -> int:
        started.clear()
        for i in range(count):
            if notices._flush is not None:
                notices._flush.wait()
            notices.ban("j", f"192.0.2.{i % 250 + 1}", "10", "1700000000")
        return len(started)

    assert bans(50) == 0, "no webhook file (a new fleet host before its first step)"
    hook_file = root / "etc/hostguard/webhook.conf"
    hook_file.parent.mkdir(parents=True, exist_ok=True)
    hook_file.write_text("url=ftp://not.a.webhook/x\n")
    hook_file.chmod(0o600)
    assert bans(20) == 0, "a webhook file that cannot be used"
    hook_file.write_text("url=https://hooks.slack.com/services/T0/B0/SECRETSECRETSECRET\n")
    assert bans(3) == 3, "usable and not refused: each ban with the lock free starts one"
    box = Spool(100, str(spool_dir(root)))
    identity = urlfile.load(settings.parse("", "hostguard.conf")).identity
    now = int(time.time())
    box.set_refusal(Refusal(identity, now - 60, now + 600, 600, "HTTP 403 invalid_token"))
    assert bans(50) == 0, "refused, the next probe not due"
    box.set_refusal(Refusal(identity, now - 700, now - 1, 600, "HTTP 403 invalid_token"))
    assert bans(1) == 1, "refused, the next probe due"
    box.set_refusal(Refusal("another file", now - 60, now + 600, 600, "HTTP 403 invalid_token"))
    assert bans(1) == 1, "the webhook file changed since the refusal"


def test_no_second_flush_while_the_first_has_not_yet_taken_the_lock(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench counted 4 flush processes for a burst of 10 bans: the lock stays free while the first
    starts up. Now the next start waits until the flush the action started took the lock (or died)."""
    children: list[subprocess.Popen[bytes]] = []

    def start_flush() -> subprocess.Popen[bytes]:
        children.append(subprocess.Popen(["sleep", "30"]))  # starting up: it has not taken the lock
        return children[-1]

    monkeypatch.setattr(events, "start_flush", start_flush)
    hook_file = root / "etc/hostguard/webhook.conf"
    hook_file.parent.mkdir(parents=True, exist_ok=True)
    hook_file.write_text("url=https://hooks.slack.com/services/T0/B0/SECRETSECRETSECRET\n")
    hook_file.chmod(0o600)
    notices = events.BanNotices("ops")
    try:
        for i in range(10):
            notices.ban("j", f"192.0.2.{i + 1}", "10", "1700000000")
        assert len(children) == 1
        box = Spool(100, str(spool_dir(root)))
        assert box.get(STARTING) == str(children[0].pid)
        box.put(STARTING, None)  # as delivery.flush does once the detached run holds the lock
        notices.ban("j", "192.0.2.99", "10", "1700000000")
        assert len(children) == 2, "it took the lock and may be past its last look: another is started"
        children[1].kill()
        children[1].wait()
        notices.ban("j", "192.0.2.100", "10", "1700000000")
        assert len(children) == 3, "the one started died before taking the lock"
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_the_detached_flush_clears_its_starting_mark_once_it_holds_the_lock(root: Path, posted: list[str]) -> None:
    box = Spool(100)
    box.enqueue("ban", None, EVENTS)
    box.put(STARTING, str(os.getpid()))
    assert delivery.flush(settings.parse("", "hostguard.conf"), box, wait=False) == 0
    assert box.get(STARTING) is None and posted == ["ban"]
    box.put(STARTING, "1")  # another's mark stays
    box.enqueue("ban 2", None, EVENTS)
    assert delivery.flush(settings.parse("", "hostguard.conf"), box, wait=False) == 0
    assert box.get(STARTING) == "1"


def test_a_webhook_file_fixed_by_chmod_opens_the_gate(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate checks the webhook file once per change of it: `chmod 600` (what the refusal tells the
    operator to run) changes neither its inode, mtime nor size, only its ctime. The gate must see it, or
    every later ban starts no delivery run until fail2ban restarts."""
    started: list[int] = []

    def start_flush() -> subprocess.Popen[bytes]:
        started.append(1)
        return subprocess.Popen(["true"])

    monkeypatch.setattr(events, "start_flush", start_flush)
    notices = events.BanNotices("ops")
    hook_file = root / "etc/hostguard/webhook.conf"
    hook_file.parent.mkdir(parents=True, exist_ok=True)
    hook_file.write_text("url=https://hooks.slack.com/services/T0/B0/SECRETSECRETSECRET\n")
    hook_file.chmod(0o644)
    notices.ban("j", "192.0.2.1", "10", "1700000000")
    assert started == [], "a webhook file others can read is refused"
    hook_file.chmod(0o600)
    assert notices._flush is None or notices._flush.wait() == 0
    notices.ban("j", "192.0.2.2", "10", "1700000000")
    assert started == [1], "fixed by chmod: the next ban starts a delivery run"
