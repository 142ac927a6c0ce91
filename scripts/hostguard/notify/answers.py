"""What a chat service's answer means, per format: the kinds the queue knows.

`classify(fmt, reply, has_channel)` sorts chat.exchange's reply (or why there is none) into:
delivered (any 2xx); transient (no answer, 408, 429, 5xx and anything else not 4xx, after
Retry-After, else the format's backoff for a 429); message (refused for good: a dead letter);
channel (404 channel_not_found on a channel override: re-send without it); webhook (the webhook
itself is refused: keep everything, probe slowly). Each format's own rule (REFUSALS) speaks first.
Error texts are the service's body redacted, then cut to 200 bytes, printable ASCII only.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import NamedTuple

from ..format_table import FACTS
from ..redact import redact
from .chat import Reply

DELIVERED = "delivered"
TRANSIENT = "transient"
MESSAGE = "message"  # refused for good: dead letter
CHANNEL = "channel"  # 404 channel_not_found on a channel override
WEBHOOK = "webhook"  # the webhook itself is refused

ERROR_MAX = 200
_HTTP_DATE = re.compile(r"[A-Za-z]{3}, [0-9]{2} [A-Za-z]{3} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT")


class Answer(NamedTuple):
    """What one post came to."""

    kind: str
    reason: str
    status: int = 0
    body: str = ""
    retry_after: float | None = None


def error_text(body: str) -> str:
    """BODY fit for a log line: redacted, then cut to ERROR_MAX bytes (no piece of a secret left), printable ASCII."""
    raw = redact(body).encode("utf-8", "surrogateescape")[:ERROR_MAX]
    return "".join(chr(byte) if 0x20 <= byte < 0x7F else "?" for byte in raw)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After VALUE asks for: decimal seconds (09 is nine) or an HTTP date; None when neither."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit() and len(value) <= 9:
        return float(int(value, 10))
    if _HTTP_DATE.fullmatch(value):
        try:
            when = parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, OverflowError):
            return None
        current = time.time() if now is None else now
        return float(max(0, int(when) - int(current)))
    return None


# Slack's refusals of the webhook itself (status, error text).
SLACK_REFUSALS = frozenset(
    {
        (403, "invalid_token"),
        (403, "action_prohibited"),
        (404, "no_service"),
        (404, "no_active_hooks"),
        (410, "channel_is_archived"),
    }
)


def _json_of(text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _wait(fmt: str, reply: Reply) -> float | None:
    """Retry-After, or the longer float `retry_after` of a JSON body (Discord's); a 429 without: the backoff."""
    status = reply.status
    wait = retry_after_seconds(reply.retry_after)
    after = _json_of(reply.body).get("retry_after") if status == 429 else None
    if isinstance(after, (int, float)) and not isinstance(after, bool) and 0 <= after < 1e6:
        wait = max(wait or 0.0, float(math.ceil(after)))
    if status == 429 and wait is None and FACTS[fmt][2] > 0:
        wait = float(FACTS[fmt][2])
    return wait


def classify(fmt: str, reply: Reply | str, has_channel: bool) -> Answer:
    """The kind of FMT's REPLY (a reason: no answer, transient): what the format's own rule says of it
    (REFUSALS), else 2xx delivered, a 4xx but 408/429 the message's fault, anything else transient."""
    if isinstance(reply, str):
        return Answer(TRANSIENT, reply)
    status, text = reply.status, reply.body
    reason = f"HTTP {status} {error_text(text)}"
    kind = REFUSALS[fmt](status, text, has_channel) if not 200 <= status < 300 else DELIVERED
    if kind is None:
        kind = MESSAGE if 400 <= status < 500 and status not in (408, 429) else TRANSIENT
    wait = _wait(fmt, reply) if kind == TRANSIENT else None
    return Answer(kind, reason, status, text, wait)


def _slack(status: int, text: str, has_channel: bool) -> str | None:
    error = error_text(text)
    if (status, error) in SLACK_REFUSALS:
        return WEBHOOK
    return CHANNEL if (status, error) == (404, "channel_not_found") and has_channel else None


def _mattermost(status: int, text: str, has_channel: bool) -> str | None:
    """A deleted hook is a 400 `incoming_webhook.invalid`, disabled hooks a 501 (not transient)."""
    error_id = str(_json_of(text).get("id", ""))
    if status == 501 or (status == 400 and "incoming_webhook.invalid" in error_id) or status == 401:
        return WEBHOOK
    locked = ("incoming_webhook.channel_locked", "incoming_webhook.channel.")
    return CHANNEL if has_channel and status in (403, 404, 500) and any(c in error_id for c in locked) else None


def _rocketchat(status: int, text: str, has_channel: bool) -> str | None:
    """A bad id or token is refused (401/403/404); its 503 stays transient."""
    if status in (401, 403, 404):
        return WEBHOOK
    return CHANNEL if status == 400 and has_channel and "overriding destination channel" in text else None


def _teams(status: int, text: str, has_channel: bool) -> str | None:
    """A 202 is only the trigger's receipt; a flow off or deleted is a 400 WorkflowTriggerIsNotEnabled."""
    error = _json_of(text).get("error")
    code = str(error.get("code", "")) if isinstance(error, dict) else ""
    return WEBHOOK if status in (401, 403, 404) or code == "WorkflowTriggerIsNotEnabled" else None


def _googlechat(status: int, text: str, has_channel: bool) -> str | None:
    """A bad key (400 API_KEY_INVALID), a revoked token, a gone space."""
    return WEBHOOK if status in (401, 403, 404) or (status == 400 and "API_KEY_INVALID" in text) else None


def _discord(status: int, text: str, has_channel: bool) -> str | None:
    """404 (10015), 401 (50027), 403, and 400 220001 (a forum channel wants a thread): the webhook's fault."""
    return WEBHOOK if status in (401, 403, 404) or (status == 400 and _json_of(text).get("code") == 220001) else None


def _pagerduty(status: int, text: str, has_channel: bool) -> str | None:
    """A 400 whose errors name the routing key refuses every event."""
    errors = _json_of(text).get("errors")
    named = status == 400 and isinstance(errors, list) and any("routing_key" in str(e) for e in errors)
    return WEBHOOK if status in (401, 403, 404) or named else None


def _webhook(status: int, text: str, has_channel: bool) -> str | None:
    return WEBHOOK if status in (401, 403, 404, 410) else None


# The format's own rule for a non-2xx answer: a kind, or None for the common rule.
REFUSALS: dict[str, Callable[[int, str, bool], str | None]] = {
    "slack": _slack,
    "mattermost": _mattermost,
    "rocketchat": _rocketchat,
    "teams": _teams,
    "googlechat": _googlechat,
    "discord": _discord,
    "pagerduty": _pagerduty,
    "webhook": _webhook,
}
