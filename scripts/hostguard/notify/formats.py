"""Per chat format, the request of one message: URL (with the format's own query, such as Discord's
`wait=true`), headers and body bytes, the text made inert and cut to the format's limit. Google Chat
threads an episode; PagerDuty triggers and resolves one incident per natural key, opens one per
`text` and gets no ban-tool notice; the generic webhook sends Alertmanager's JSON. The facts of each
format come from components/chatFormats.ts (format_table.py); answers.py reads the answers.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..format_table import FACTS, HOSTS
from .message import FIRING, NOTICE, RESOLVED, Identity, Message, cut, sends

DEDUP_MAX = 255
JSON_TYPE = "application/json"


class Request(NamedTuple):
    url: str
    headers: dict[str, str]
    body: bytes


# ---- texts -----------------------------------------------------------------


def _json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _with_query(url: str, **params: str) -> str:
    """URL with PARAMS set in its query (replacing any of the same name), the rest kept in order."""
    parts = urlsplit(url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    return urlunsplit(parts._replace(query=urlencode(kept + list(params.items()))))


# Text inert in each format: whoever names a container or writes its error (docker's .State.Error)
# writes into the message, and must not ping a channel nor disguise a link. Slack's own escapes (the
# three it names), a word joiner after an @ that starts a word (Mattermost's and Rocket.Chat's @here,
# @channel, @all, @user), after the < of Google Chat's <users/all> and <url|label>, and between the ]( of
# a Markdown link. Text without these characters (every text of the SPEC) is sent byte for byte.
_JOINER = "\u2060"
_SLACK_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))
_AT_WORD = re.compile(r"(?<!\w)@(?=\w)")
_MARKDOWN_LINK = "]("


def inert(fmt: str, text: str) -> str:
    """TEXT with no mention or link syntax of FMT left working (see _JOINER's comment)."""
    if fmt in ("slack", "mattermost", "rocketchat"):
        for raw, escaped in _SLACK_ESCAPES:
            text = text.replace(raw, escaped)
    if fmt in ("mattermost", "rocketchat"):
        text = _AT_WORD.sub("@" + _JOINER, text)
    if fmt == "googlechat":
        text = text.replace("<", "<" + _JOINER)
    if fmt in ("mattermost", "rocketchat", "teams", "googlechat", "discord"):
        text = text.replace(_MARKDOWN_LINK, "]" + _JOINER + "(")
    return text


def natural_key(identity: Identity) -> str:
    return f"{identity.host}:{identity.monitor}:{identity.condition}"


def dedup_key(identity: Identity) -> str:
    """PagerDuty's dedup_key: one per natural key, hashed (SHA-256) when it would pass 255 characters."""
    key = "hostguard:" + natural_key(identity)
    if len(key) <= DEDUP_MAX:
        return key
    return "hostguard:sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def event_key(message: Message) -> str:
    """PagerDuty's dedup_key of MESSAGE: its natural key's (dedup_key), but a notice's own (an operator's
    `text`: no recovery follows), from its time and text, so each text opens an incident of its own and
    only a re-send of the same message folds into it."""
    ident = message.identity
    if ident.state != NOTICE:
        return dedup_key(ident)
    seed = hashlib.sha256(f"{int(message.created)}:{message.text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return dedup_key(ident._replace(condition=f"{ident.condition}:{seed}"))


def fingerprint(identity: Identity) -> str:
    """The generic webhook's fingerprint: 16 hex digits of SHA-256 of the natural key."""
    return hashlib.sha256(natural_key(identity).encode("utf-8")).hexdigest()[:16]


def thread_key(identity: Identity) -> str | None:
    """Google Chat's threadKey: one per episode of a natural key; none for a notice."""
    if identity.state == NOTICE:
        return None
    seed = f"{natural_key(identity)}:{identity.episode}".encode()
    return "hg-" + hashlib.sha256(seed).hexdigest()[:40]


# ---- requests --------------------------------------------------------------


def request_slack(url: str, key: str, message: Message) -> Request:
    """Slack's form body `payload={"text":...,"channel"?}` (Mattermost and Rocket.Chat take it too)."""
    payload: dict[str, str] = {"text": message.text}
    if message.channel:
        payload["channel"] = "#" + message.channel.lstrip("#")
    body = urlencode({"payload": json.dumps(payload, ensure_ascii=False, separators=(",", ":"))}).encode("ascii")
    return Request(url, {"Content-Type": "application/x-www-form-urlencoded"}, body)


def _slack_like(limit: int) -> Callable[[str, str, Message], Request]:
    def request(url: str, key: str, message: Message) -> Request:
        return request_slack(url, key, message._replace(text=cut(message.text, limit)))

    return request


def _card(text: str, state: str) -> bytes:
    block: dict[str, object] = {"type": "TextBlock", "text": text, "wrap": True, "weight": "Bolder"}
    if state != NOTICE:
        block["color"] = "Good" if state == RESOLVED else "Attention"
    content = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.2",
        "body": [block],
        "msteams": {"width": "Full"},
    }
    attachment = {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": content}
    return _json({"type": "message", "attachments": [attachment]})


def request_teams(url: str, key: str, message: Message) -> Request:
    """An Adaptive Card in Workflows' message envelope; the whole body within the limit (bytes)."""
    limit, state = FACTS["teams"][1], message.identity.state
    text = cut(message.text, limit)
    body = _card(text, state)
    if len(body) <= limit:
        return Request(url, {"Content-Type": JSON_TYPE}, body)
    marker = f"\n[... cut: the message was longer than {limit:,} bytes]"
    low, high = 0, len(text)  # the longest prefix that fits: at least LOW, less than HIGH
    while high - low > 1:
        middle = (low + high) // 2
        if len(_card(message.text[:middle] + marker, state)) <= limit:
            low = middle
        else:
            high = middle
    body = _card(message.text[:low] + marker, state)
    return Request(url, {"Content-Type": JSON_TYPE}, body)


def request_googlechat(url: str, key: str, message: Message) -> Request:
    """`{"text", "thread"?}`; messageReplyOption only with a thread key (the episode's thread)."""
    body: dict[str, object] = {"text": cut(message.text, FACTS["googlechat"][1])}
    thread = thread_key(message.identity)
    if thread is not None:
        body["thread"] = {"threadKey": thread}
        url = _with_query(url, messageReplyOption="REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD")
    return Request(url, {"Content-Type": JSON_TYPE + "; charset=UTF-8"}, _json(body))


def request_discord(url: str, key: str, message: Message) -> Request:
    """`{"content"}` with no mention parsed, `?wait=true` (else a 204 says nothing was checked)."""
    body = {"content": cut(message.text, FACTS["discord"][1]), "allowed_mentions": {"parse": []}}
    return Request(_with_query(url, wait="true"), {"Content-Type": JSON_TYPE}, _json(body))


def request_pagerduty(url: str, key: str, message: Message) -> Request:
    """An Events API v2 event: trigger on firing (and its repeats), resolve on recovery; KEY is the routing key."""
    ident = message.identity
    if not sends("pagerduty", ident):
        raise ValueError("PagerDuty gets no ban-tool notice (formats.sends)")
    event: dict[str, object] = {"routing_key": key, "dedup_key": event_key(message)}
    if ident.state == RESOLVED:
        event["event_action"] = "resolve"
    else:
        event["event_action"] = "trigger"
        event["payload"] = {
            "summary": cut(message.text, FACTS["pagerduty"][1]),
            "source": ident.host or "unknown",
            "severity": _severity(ident),
            "component": ident.monitor,
            "class": f"{ident.monitor}.{ident.condition}",
            "custom_details": {"monitor": ident.monitor, "condition": ident.condition, "since": _iso(ident.episode)},
        }
        event["client"] = "hostguard"
    return Request(url, {"Content-Type": JSON_TYPE}, _json(event))


def _severity(ident: Identity) -> str:
    """PagerDuty's severity: a container down is an error, a host over a threshold a warning, hostguard's
    own connectivity test (triggered and at once resolved) only information."""
    if ident.monitor == "hostguard" and ident.condition == "connectivity-test":
        return "info"
    return "error" if ident.monitor == "container" else "warning"


def _iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def request_webhook(url: str, key: str, message: Message) -> Request:
    """Alertmanager's webhook JSON (version 4): one alert, its fingerprint, firing or resolved."""
    ident = message.identity
    status = RESOLVED if ident.state == RESOLVED else FIRING
    labels = {"alertname": f"{ident.monitor}_{ident.condition}", "host": ident.host, "monitor": ident.monitor}
    labels.update({"condition": ident.condition, "severity": "info" if ident.state == NOTICE else "warning"})
    annotations = {"summary": cut(message.text, FACTS["webhook"][1])}
    alert = {
        "status": status,
        "labels": labels,
        "annotations": annotations,
        "startsAt": _iso(ident.episode or int(message.created)),
        "endsAt": _iso(int(message.created)) if status == RESOLVED else "0001-01-01T00:00:00Z",
        "generatorURL": "",
        "fingerprint": fingerprint(ident),
    }
    group = {"alertname": labels["alertname"]}
    body = {"version": "4", "groupKey": f"hostguard:{fingerprint(ident)}", "truncatedAlerts": 0}
    body.update({"receiver": "hostguard", "status": status, "alerts": [alert], "groupLabels": group})
    body.update({"commonLabels": labels, "commonAnnotations": annotations, "externalURL": ""})
    return Request(url, {"Content-Type": JSON_TYPE}, _json(body))


# ---- the table and the detection ---------------------------------------------


class Format(NamedTuple):
    request: Callable[[str, str, Message], Request]
    has_channel: bool
    text_limit: int
    backoff: int
    never_probe: bool
    pace: float
    hosts: tuple[str, ...]


def _format(name: str, request: Callable[[str, str, Message], Request]) -> Format:
    has_channel, limit, backoff, never_probe, _title, pace = FACTS[name]
    hosts = tuple(("*." if suffix else "") + host for host, suffix, fmt in HOSTS if fmt == name)
    return Format(request, has_channel, limit, backoff, never_probe, pace, hosts)


FORMATS: dict[str, Format] = {
    "slack": _format("slack", _slack_like(FACTS["slack"][1])),
    "mattermost": _format("mattermost", _slack_like(FACTS["mattermost"][1])),
    "rocketchat": _format("rocketchat", _slack_like(FACTS["rocketchat"][1])),
    "teams": _format("teams", request_teams),
    "googlechat": _format("googlechat", request_googlechat),
    "discord": _format("discord", request_discord),
    "pagerduty": _format("pagerduty", request_pagerduty),
    "webhook": _format("webhook", request_webhook),
}


def request(fmt: str, url: str, key: str, message: Message) -> Request:
    """The request of MESSAGE in FMT; the channel only for a format that has channels."""
    row = FORMATS[fmt]
    if not row.has_channel:
        message = message._replace(channel=None)
    made = row.request(url, key, message._replace(text=inert(fmt, message.text)))
    return made._replace(headers={**made.headers, "User-Agent": "hostguard"})
