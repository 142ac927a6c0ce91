"""chat.py and answers.py's Slack rule: the classification of Slack's answers, Retry-After, error texts,
the exchange's refusals."""

from __future__ import annotations

import email.utils
import socket
import ssl
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard import redact
from hostguard.notify import answers, chat


def slack(status: int, body: str, retry_after: str | None, channel: bool) -> answers.Answer:
    return answers.classify("slack", chat.Reply(status, retry_after, body), channel)


@pytest.mark.parametrize(
    ("status", "body", "channel", "kind"),
    [
        (200, "ok", False, answers.DELIVERED),
        (200, "no_text", False, answers.DELIVERED),
        (204, "", False, answers.DELIVERED),
        (299, "", True, answers.DELIVERED),
        (500, "internal_error", False, answers.TRANSIENT),
        (503, "", False, answers.TRANSIENT),
        (408, "", False, answers.TRANSIENT),
        (429, "rate_limited", False, answers.TRANSIENT),
        (301, "", False, answers.TRANSIENT),
        (100, "", False, answers.TRANSIENT),
        (403, "invalid_token", False, answers.WEBHOOK),
        (403, "action_prohibited", True, answers.WEBHOOK),
        (404, "no_service", False, answers.WEBHOOK),
        (404, "no_active_hooks", False, answers.WEBHOOK),
        (410, "channel_is_archived", False, answers.WEBHOOK),
        (404, "channel_not_found", True, answers.CHANNEL),
        (404, "channel_not_found", False, answers.MESSAGE),
        (400, "invalid_payload", False, answers.MESSAGE),
        (403, "something_else", False, answers.MESSAGE),
        (413, "too_large", False, answers.MESSAGE),
        (404, "invalid_token", False, answers.MESSAGE),
    ],
)
def test_classify(status: int, body: str, channel: bool, kind: str) -> None:
    answer = slack(status, body, None, channel)
    assert answer.kind == kind
    assert answer.reason == f"HTTP {status} {body}"


def test_retry_after_seconds_are_decimal() -> None:
    assert answers.retry_after_seconds("09") == 9.0
    assert answers.retry_after_seconds(" 120 ") == 120.0
    assert answers.retry_after_seconds("0") == 0.0
    for bad in ("", "1.5", "-1", "1e3", "١٢", "9999999999", "soon", None):
        assert answers.retry_after_seconds(bad) is None


def test_retry_after_http_date() -> None:
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 29 <= (answers.retry_after_seconds(date, now) or 0) <= 30
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert answers.retry_after_seconds(past, now) == 0.0
    assert answers.retry_after_seconds("Sun, 99 Nov 2026 25:61:00 GMT") is None
    assert answers.retry_after_seconds("Sunday, 06-Nov-94 08:49:37 GMT") is None


def test_a_classified_429_carries_its_retry_after() -> None:
    assert slack(429, "rate_limited", "7", False).retry_after == 7.0
    assert slack(500, "x", None, False).retry_after is None


def test_error_text_is_redacted_then_cut_and_printable(root: Path) -> None:
    (root / "etc/hostguard").mkdir(parents=True)
    secret = "/services/T000/B000/SENTINELsecretSENTINELsecret"
    (root / "etc/hostguard/webhook.conf").write_text(f"url=https://hooks.example{secret}\n")
    text = answers.error_text(f"Cannot POST {secret}\n\tdone é")
    assert "SENTINEL" not in text
    assert text == f"Cannot POST {redact.REDACTED}??done ??"
    long = answers.error_text("x" * 500 + secret)
    assert len(long) == answers.ERROR_MAX and "SENTINEL" not in long


@given(st.text())
def test_error_text_is_always_short_printable_ascii(body: str) -> None:
    text = answers.error_text(body)
    assert len(text) <= answers.ERROR_MAX
    assert all(0x20 <= ord(c) < 0x7F for c in text)


def test_exchange_refuses_anything_but_https() -> None:
    assert (
        chat.exchange("POST", "http://example.invalid/x", b"t", {}, 1, ssl.create_default_context())
        == "protocol refused (https only)"
    )


def test_exchange_with_a_closed_port_does_not_name_it() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reason = chat.exchange("POST", f"https://127.0.0.1:{port}/services/x", b"t", {}, 2, ssl.create_default_context())
    assert reason == "connection refused or unreachable"
    assert isinstance(reason, str) and str(port) not in reason
