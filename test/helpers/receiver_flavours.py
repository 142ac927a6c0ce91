"""Flavours of the test receiver (webhook-receiver.py --flavour F): each checks a
request as that chat service does and answers with its own bodies, the
misleading ones included (research: /work/shared/research/chat-targets.md).

    mattermost  POST /hooks/<id>: form `payload=` or JSON, non-empty text of at
                most 16,383 characters; 200 text/plain `ok`
    rocketchat  POST /hooks/<id>/<token>: form or JSON, text; 200
                {"success":true}
    teams       POST .../workflows/<id>/triggers/manual/paths/invoke with
                api-version, sp, sv and sig: application/json only (a form body
                gets 400), then 202 with an empty body even when the flow run
                fails afterwards (no `attachments` of Adaptive Cards, or a body
                over 28 KB): such a 202 records nothing ("run failed")
    googlechat  POST /v1/spaces/<id>/messages?key=&token=: JSON, non-empty text,
                at most 32,000 bytes; messageReplyOption iff thread.threadKey;
                200 with the message's and its thread's names (one thread per
                threadKey, recorded as "thread")
    discord     POST /api[/vN]/webhooks/<digits>/<token>: JSON, content of 1 to
                2,000 characters; 200 with the message when ?wait=true, else
                204 (the message saved or not: nothing was checked)
    pagerduty   POST /v2/enqueue: JSON event, routing_key of 32 characters,
                event_action trigger|acknowledge|resolve, a trigger's summary
                (at most 1,024), source and severity, dedup_key at most 255;
                202; the incident of each dedup_key kept: "opened",
                "deduplicated" (a trigger while open), "resolved", "dropped" (a
                resolve of no open incident, still 202), recorded as "incident"
    webhook     POST any path: Alertmanager's JSON (version "4", status
                firing|resolved, alerts each with a fingerprint); 200

Each record (messages file) adds to the default receiver's fields "flavour" and
"text" (what the service shows). The modes (mode file) of a flavour:
    ok            as above
    refused       the webhook is gone, as the service says it: mattermost 400
                  web.incoming_webhook.invalid, rocketchat 404 "Invalid
                  integration id or token", teams 400 WorkflowTriggerIsNotEnabled,
                  googlechat 400 API_KEY_INVALID, discord 404 Unknown Webhook
                  (10015), pagerduty 400 naming routing_key, webhook 410
    disabled      mattermost 501 (incoming webhooks disabled), rocketchat 503
                  (integration disabled), teams 404 WorkflowNotFound, googlechat
                  403 PERMISSION_DENIED, discord 401 Invalid Webhook Token, webhook 403
    locked        a message with a channel override refused (mattermost 403
                  channel_locked, rocketchat 400 "overriding destination channel")
    runfailed     teams: 202, nothing recorded (the flow run failed)
    ratelimit N   the service's 429 for N seconds from the first request in this
                  mode (discord: Retry-After and a float retry_after; googlechat
                  and pagerduty: no Retry-After; rocketchat: X-RateLimit-* only)
    pace N        at most one message per N seconds, the service's 429 beyond
    status500 | hang [N] | reset   as the default receiver
"""

import json
import math
import re
import urllib.parse

FLAVOURS = ("slack", "mattermost", "rocketchat", "teams", "googlechat", "discord", "pagerduty", "webhook")
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
REPLY_OPTIONS = ("MESSAGE_REPLY_OPTION_UNSPECIFIED", "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD", "REPLY_MESSAGE_OR_FAIL")
PATHS = {
    "mattermost": r"/hooks/[A-Za-z0-9]+",
    "rocketchat": r"/hooks/[A-Za-z0-9]+(/[A-Za-z0-9]+)?/[A-Za-z0-9]+",
    "teams": r"(/powerautomate/automations/direct(/cu/[0-9]+)?)?/workflows/[0-9a-f]+/triggers/manual/paths/invoke",
    "googlechat": r"/v1/spaces/[A-Za-z0-9_-]+/messages",
    "discord": r"/api(/v[0-9]+)?/webhooks/[0-9]+/[A-Za-z0-9_-]+",
    "pagerduty": r"/v2/enqueue",
    "webhook": r"/.*",
}


class Reply:
    """An answer: status, body, content type, extra headers; RECORD: the message to record (None: nothing)."""

    def __init__(self, status, body="", content_type=JSON, headers=(), record=None, label=None):
        self.status, self.body, self.content_type, self.headers = status, body, content_type, list(headers)
        self.record, self.label = record, label if label is not None else status


def _json(status, value, headers=()):
    return Reply(status, json.dumps(value, separators=(",", ":")), JSON, headers)


def _form_or_json(content_type, raw):
    """A Slack-compatible body: the form field `payload` or a JSON object; None when neither."""
    try:
        if content_type.startswith(JSON):
            value = json.loads(raw)
        else:
            form = urllib.parse.parse_qs(raw, keep_blank_values=True)
            value = json.loads(form["payload"][0]) if "payload" in form else None
    except (ValueError, KeyError):
        return None
    return value if isinstance(value, dict) else None


def _object(raw):
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# ---- the services' error bodies ---------------------------------------------------------


def _mattermost_error(status, error_id, message):
    return _json(status, {"id": error_id, "message": message, "detailed_error": "", "status_code": status})


def _teams_error(status, code, message):
    return _json(status, {"error": {"code": code, "message": message}})


def _google_error(status, state, message, reason=None):
    error = {"code": status, "message": message, "status": state}
    if reason:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    return _json(status, {"error": error})


def _discord_error(status, code, message):
    return _json(status, {"message": message, "code": code})


def _pagerduty_invalid(errors):
    return _json(400, {"status": "invalid event", "message": "Event object is invalid", "errors": errors})


REFUSED = {
    "mattermost": lambda: _mattermost_error(400, "web.incoming_webhook.invalid.app_error", "Invalid webhook."),
    "rocketchat": lambda: _json(404, {"success": False, "error": "Invalid integration id or token provided."}),
    "teams": lambda: _teams_error(
        400, "WorkflowTriggerIsNotEnabled", "The workflow 'x' cannot be triggered because it is in state 'Disabled'."
    ),
    "googlechat": lambda: _google_error(
        400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "API_KEY_INVALID"
    ),
    "discord": lambda: _discord_error(404, 10015, "Unknown Webhook"),
    "pagerduty": lambda: _pagerduty_invalid(["Length of 'routing_key' is incorrect (should be 32 characters)"]),
    "webhook": lambda: Reply(410, "gone", TEXT),
}
DISABLED = {
    "mattermost": lambda: _mattermost_error(
        501, "web.incoming_webhook.disabled.app_error", "Incoming webhooks have been disabled by the system admin."
    ),
    "rocketchat": lambda: _json(503, {"success": False, "error": "Service Unavailable"}),
    "teams": lambda: _teams_error(404, "WorkflowNotFound", "The workflow 'x' could not be found."),
    "googlechat": lambda: _google_error(403, "PERMISSION_DENIED", "The caller does not have permission"),
    "discord": lambda: _discord_error(401, 50027, "Invalid Webhook Token"),
    "webhook": lambda: Reply(403, "forbidden", TEXT),
}


def rate_limited(flavour, left):
    """The service's 429 with LEFT seconds to wait."""
    after = str(max(1, math.ceil(left)))
    if flavour == "discord":
        body = {"message": "You are being rate limited.", "retry_after": round(max(left, 0.001), 3), "global": False}
        headers = [("Retry-After", after), ("X-RateLimit-Scope", "shared"), ("X-RateLimit-Remaining", "0")]
        return _json(429, body, headers)
    if flavour == "googlechat":
        return _google_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")
    if flavour == "pagerduty":
        return Reply(429, "", TEXT)
    if flavour == "rocketchat":
        error = f"Error, too many requests. Please slow down. You must wait {after} seconds before trying this endpoint again."
        return _json(429, {"success": False, "error": error}, [("X-RateLimit-Limit", "10"), ("X-RateLimit-Remaining", "0")])
    if flavour == "teams":
        return _json(429, {"error": {"code": "TooManyRequests", "message": "Rate limit is exceeded."}}, [("Retry-After", after)])
    return Reply(429, "rate_limited", TEXT, [("Retry-After", after)])


# ---- the services' checks and successes ---------------------------------------------------


def _slack_like(flavour, content_type, raw, query, mode, state):
    payload = _form_or_json(content_type, raw)
    text = payload.get("text") if payload else None
    locked = mode == "locked" and payload is not None and "channel" in payload
    if flavour == "mattermost":
        if not isinstance(text, str) or not text:
            return _mattermost_error(400, "web.incoming_webhook.text.app_error", "No text specified.")
        if len(text) > 16383:
            return _mattermost_error(400, "web.incoming_webhook.text.length.app_error", "Text too long.")
        if locked:
            return _mattermost_error(403, "web.incoming_webhook.channel_locked.app_error", "This webhook is locked.")
        return Reply(200, "ok", TEXT, record={"payload": payload, "text": text})
    if not isinstance(text, str) or not text:
        return _json(400, {"success": False, "error": "message text is required"})
    if locked:
        return _json(400, {"success": False, "error": "overriding destination channel is disabled for this integration"})
    return Reply(200, json.dumps({"success": True}), JSON, record={"payload": payload, "text": text})


def _teams(flavour, content_type, raw, query, mode, state):
    if not {"api-version", "sp", "sv", "sig"} <= set(query):
        return _teams_error(401, "DirectApiAuthorizationRequired", "The request must be authenticated.")
    body = _object(raw) if content_type.startswith(JSON) else None
    if body is None:
        return _teams_error(400, "InvalidRequestContent", "The request content is not valid JSON.")
    attachments = body.get("attachments")
    cards = isinstance(attachments, list) and attachments and all(
        isinstance(a, dict) and a.get("contentType") == "application/vnd.microsoft.card.adaptive"
        and isinstance(a.get("content"), dict) and a["content"].get("type") == "AdaptiveCard"
        for a in attachments
    )
    too_large = len(raw.encode("utf-8", "surrogateescape")) > 28 * 1024
    if mode == "runfailed" or body.get("type") != "message" or not cards or too_large:
        return Reply(202, "", TEXT, label="runfailed")
    texts = [b.get("text", "") for a in attachments for b in a["content"].get("body", []) if isinstance(b, dict)]
    return Reply(202, "", TEXT, record={"payload": body, "text": "\n".join(texts)})


def _googlechat(flavour, content_type, raw, query, mode, state):
    if "key" not in query or "token" not in query:
        return _google_error(401, "UNAUTHENTICATED", "Request is missing required authentication credential.")
    body = _object(raw) if content_type.startswith(JSON) else None
    if body is None or not isinstance(body.get("text"), str) or not body["text"]:
        return _google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received or message has no text.")
    if len(raw.encode("utf-8", "surrogateescape")) > 32000:
        return _google_error(400, "INVALID_ARGUMENT", "Message exceeds the maximum size.")
    thread = body.get("thread")
    key = thread.get("threadKey") if isinstance(thread, dict) else None
    option = query.get("messageReplyOption", [None])[0]
    if (option is None) != (key is None) or (option is not None and option not in REPLY_OPTIONS):
        return _google_error(400, "INVALID_ARGUMENT", "messageReplyOption goes with thread.threadKey only.")
    with state.lock:
        state.count_messages = getattr(state, "count_messages", 0) + 1
        threads = state.__dict__.setdefault("threads", {})
        fresh = f"spaces/X/threads/t{len(threads) + 1}" if key else f"spaces/X/threads/n{state.count_messages}"
        name = threads.setdefault(key, fresh) if key else fresh
        number = state.count_messages
    answer = {"name": f"spaces/X/messages/m{number}", "text": body["text"], "thread": {"name": name}}
    return Reply(200, json.dumps(answer), JSON, record={"payload": body, "text": body["text"], "thread": name})


def _discord(flavour, content_type, raw, query, mode, state):
    body = _object(raw) if content_type.startswith(JSON) else None
    if body is None:
        return _discord_error(400, 50109, "The request body contains invalid JSON.")
    content = body.get("content")
    if not isinstance(content, str) or not content:
        return _discord_error(400, 50006, "Cannot send an empty message")
    if len(content) > 2000:
        return _json(400, {"message": "Invalid Form Body", "code": 50035,
                           "errors": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH"}]}}})
    record = {"payload": body, "text": content}
    if query.get("wait", ["false"])[0].lower() != "true":
        return Reply(204, "", TEXT, record=record, label="204 nowait")
    with state.lock:
        state.count_messages = getattr(state, "count_messages", 0) + 1
        number = state.count_messages
    return Reply(200, json.dumps({"id": str(1100000000000000000 + number), "content": content}), JSON, record=record)


def _pagerduty_check(event):
    errors = []
    if not isinstance(event.get("routing_key"), str) or len(event["routing_key"]) != 32:
        errors.append("Length of 'routing_key' is incorrect (should be 32 characters)")
    if event.get("event_action") not in ("trigger", "acknowledge", "resolve"):
        errors.append("'event_action' is invalid (must be one of trigger, acknowledge, resolve)")
    key = event.get("dedup_key")
    if key is not None and (not isinstance(key, str) or len(key) > 255):
        errors.append("'dedup_key' is too long (should be at most 255 characters)")
    payload = event.get("payload")
    if event.get("event_action") == "trigger":
        if not isinstance(payload, dict):
            errors.append("'payload' is missing or invalid")
        else:
            summary = payload.get("summary")
            if not isinstance(summary, str) or not summary or len(summary) > 1024:
                errors.append("'payload.summary' is missing or too long (at most 1024 characters)")
            if not isinstance(payload.get("source"), str) or not payload["source"]:
                errors.append("'payload.source' is missing")
            if payload.get("severity") not in ("critical", "error", "warning", "info"):
                errors.append("'payload.severity' is invalid")
    return errors


def _pagerduty(flavour, content_type, raw, query, mode, state):
    event = _object(raw) if content_type.startswith(JSON) else None
    if event is None or len(raw.encode("utf-8", "surrogateescape")) > 512 * 1024:
        return _pagerduty_invalid(["Event object is not valid JSON or too large"])
    errors = _pagerduty_check(event)
    if errors:
        return _pagerduty_invalid(errors)
    action, key = event["event_action"], event.get("dedup_key") or f"generated-{id(event)}"
    with state.lock:
        incidents = state.__dict__.setdefault("incidents", {})
        open_now = incidents.get(key) == "open"
        if action == "trigger":
            outcome = "deduplicated" if open_now else "opened"
            incidents[key] = "open"
        elif action == "resolve" and open_now:
            outcome, incidents[key] = "resolved", "resolved"
        else:
            outcome = "acknowledged" if action == "acknowledge" and open_now else "dropped"
    text = event["payload"]["summary"] if action == "trigger" else ""
    answer = {"status": "success", "message": "Event processed", "dedup_key": key}
    record = {"payload": event, "text": text, "incident": outcome, "dedup_key": key}
    return Reply(202, json.dumps(answer), JSON, record=record)


def _webhook(flavour, content_type, raw, query, mode, state):
    body = _object(raw) if content_type.startswith(JSON) else None
    alerts = body.get("alerts") if body else None
    good = (
        body is not None and body.get("version") == "4" and body.get("status") in ("firing", "resolved")
        and isinstance(alerts, list) and alerts
        and all(isinstance(a, dict) and a.get("fingerprint") and a.get("status") in ("firing", "resolved") for a in alerts)
    )
    if not good:
        return Reply(400, "not an Alertmanager webhook message (version 4)", TEXT)
    text = "\n".join(str(a.get("annotations", {}).get("summary", "")) for a in alerts)
    return Reply(200, "", TEXT, record={"payload": body, "text": text, "status": body["status"]})


CHECKS = {
    "mattermost": _slack_like,
    "rocketchat": _slack_like,
    "teams": _teams,
    "googlechat": _googlechat,
    "discord": _discord,
    "pagerduty": _pagerduty,
    "webhook": _webhook,
}


def reply(flavour, mode, params, path, content_type, raw, now, state):
    """The answer of FLAVOUR in MODE to a POST of RAW (text, surrogate-escaped) to PATH (with its query)."""
    parts = urllib.parse.urlsplit(path)
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    if not re.fullmatch(PATHS[flavour], parts.path):
        return Reply(404, "Not Found", TEXT)
    if mode in ("refused", "disabled"):
        table = REFUSED if mode == "refused" else DISABLED
        return table[flavour]() if flavour in table else Reply(500, "unknown_test_mode", TEXT)
    if mode in ("ratelimit", "pace"):
        seconds = float(params[0]) if params else (2.0 if mode == "ratelimit" else 1.0)
        with state.lock:
            if mode == "ratelimit":
                state.window_start = now if state.window_start is None else state.window_start
                left = state.window_start + seconds - now
            else:
                left = 0.0 if state.last_accept is None else state.last_accept + seconds - now
        if left > 0:
            return rate_limited(flavour, left)
    elif mode not in ("ok", "locked", "runfailed"):
        return Reply(500, "unknown_test_mode", TEXT)
    answer = CHECKS[flavour](flavour, content_type, raw, query, mode, state)
    if mode == "pace" and answer.record is not None:
        with state.lock:
            state.last_accept = now
    return answer
