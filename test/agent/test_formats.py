"""formats.py and answers.py: each chat format's request, its limits and identity, and its answers' kinds."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard import urltext
from hostguard.format_table import FACTS
from hostguard.notify import answers, formats, message
from hostguard.notify.answers import CHANNEL, DELIVERED, MESSAGE, TRANSIENT, WEBHOOK
from hostguard.notify.chat import Reply
from hostguard.notify.message import BANTOOL, FIRING, NOTICE, RESOLVED, Identity, Message

URLS = {
    "slack": "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "mattermost": "https://chat.example.org/hooks/abcdefghijklmnopqrstuvwxyz",
    "rocketchat": "https://rocket.example.org/hooks/abc123/tokentokentoken",
    "teams": "https://default1a2b.3c.environment.api.powerplatform.com:443/powerautomate/automations/direct/workflows/"
    "0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun"
    "&sv=1.0&sig=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
    "googlechat": "https://chat.googleapis.com/v1/spaces/AAAA1234/messages?key=KEYKEY&token=TOKENTOKEN",
    "discord": "https://discord.com/api/webhooks/123456789012345678/tokentokentoken",
    "pagerduty": "https://events.pagerduty.com/v2/enqueue",
    "webhook": "https://bridge.example.org/alertmanager",
}
ROUTING_KEY = "0123456789abcdef0123456789abcdef"

names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
identities = st.builds(
    Identity,
    names,
    st.one_of(names, st.just(BANTOOL)),
    names,
    st.integers(0, 2**32),
    st.sampled_from((FIRING, RESOLVED, NOTICE)),
)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)
channels = st.one_of(st.none(), st.from_regex(r"[a-z0-9][a-z0-9._-]{0,20}", fullmatch=True))
messages = st.builds(Message, texts, channels, identities, st.integers(0, 2**32))


def post(fmt: str, msg: Message) -> formats.Request:
    return formats.request(fmt, URLS[fmt], ROUTING_KEY, msg)


def body_json(req: formats.Request) -> Any:
    value = json.loads(req.body.decode("utf-8"))
    assert isinstance(value, dict)
    return value


def header(req: formats.Request, name: str) -> str:
    return dict(req.headers)[name]


# ---- requests ----------------------------------------------------------------


@given(messages)
def test_slack_like_bodies_are_slacks_form_body(msg: Message) -> None:
    for fmt in ("slack", "mattermost", "rocketchat"):
        req = post(fmt, msg)
        form = parse_qs(req.body.decode("ascii"), keep_blank_values=True, strict_parsing=True)
        assert list(form) == ["payload"]
        sent = {"text": message.cut(formats.inert(fmt, msg.text), FACTS[fmt][1])}
        if msg.channel:
            sent["channel"] = "#" + msg.channel.lstrip("#")
        assert json.loads(form["payload"][0]) == sent
        assert header(req, "Content-Type") == "application/x-www-form-urlencoded"
        assert req.url == URLS[fmt]


@given(messages)
def test_teams_sends_an_adaptive_card_in_the_workflows_envelope(msg: Message) -> None:
    req = post("teams", msg)
    body = body_json(req)
    assert header(req, "Content-Type") == "application/json"
    assert body["type"] == "message"
    (attachment,) = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    content = attachment["content"]
    assert content["type"] == "AdaptiveCard" and content["version"] == "1.2"
    (block,) = content["body"]
    assert block["type"] == "TextBlock" and block["wrap"] is True and block["text"] == formats.inert("teams", msg.text)
    colour = {FIRING: "Attention", RESOLVED: "Good"}.get(msg.identity.state)
    assert block.get("color") == colour
    assert "channel" not in req.body.decode("utf-8") or "channel" in msg.text
    assert req.url == URLS["teams"]


@given(messages)
def test_google_chat_threads_an_episode(msg: Message) -> None:
    req = post("googlechat", msg)
    body = body_json(req)
    query = parse_qs(urlsplit(req.url).query)
    assert query["key"] == ["KEYKEY"] and query["token"] == ["TOKENTOKEN"]
    assert body["text"] == formats.inert("googlechat", msg.text)
    assert header(req, "Content-Type") == "application/json; charset=UTF-8"
    if msg.identity.state == NOTICE:
        assert "thread" not in body and "messageReplyOption" not in query
    else:
        assert body["thread"] == {"threadKey": formats.thread_key(msg.identity)}
        assert query["messageReplyOption"] == ["REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"]


@given(identities, identities)
def test_thread_key_is_one_per_episode_of_a_key(a: Identity, b: Identity) -> None:
    firing, resolved = a._replace(state=FIRING), a._replace(state=RESOLVED)
    assert formats.thread_key(firing) == formats.thread_key(resolved)
    key = formats.thread_key(firing)
    assert key is not None and len(key) <= 64 and key.replace("-", "").isalnum()
    same = (a.host, a.monitor, a.condition, a.episode) == (b.host, b.monitor, b.condition, b.episode)
    assert (formats.thread_key(b._replace(state=FIRING)) == key) == same
    assert formats.thread_key(a._replace(state=NOTICE)) is None


@given(messages)
def test_discord_waits_and_mentions_no_one(msg: Message) -> None:
    req = post("discord", msg)
    assert body_json(req) == {"content": formats.inert("discord", msg.text), "allowed_mentions": {"parse": []}}
    assert urlsplit(req.url).query == "wait=true"
    assert urlsplit(req.url).path == urlsplit(URLS["discord"]).path


def test_discord_wait_replaces_one_given_and_keeps_the_rest() -> None:
    msg = Message("x", None, Identity("h", "m", "c", 0, NOTICE))
    req = formats.request("discord", URLS["discord"] + "?thread_id=42&wait=false", "", msg)
    assert parse_qsl(urlsplit(req.url).query) == [("thread_id", "42"), ("wait", "true")]


@given(messages)
def test_pagerduty_triggers_on_firing_and_resolves_one_key(msg: Message) -> None:
    if msg.identity.state == NOTICE and msg.identity.monitor == BANTOOL:
        assert not message.sends("pagerduty", msg.identity)
        with pytest.raises(ValueError, match="notice"):
            post("pagerduty", msg)
        return
    assert message.sends("pagerduty", msg.identity)
    event = body_json(post("pagerduty", msg))
    assert event["routing_key"] == ROUTING_KEY
    assert event["dedup_key"] == formats.event_key(msg)
    if msg.identity.state != NOTICE:
        assert event["dedup_key"] == formats.dedup_key(msg.identity)
    if msg.identity.state == RESOLVED:
        assert event == {"routing_key": ROUTING_KEY, "event_action": "resolve", "dedup_key": event["dedup_key"]}
        return
    assert event["event_action"] == "trigger"
    payload = event["payload"]
    assert isinstance(payload, dict)
    assert payload["summary"] == msg.text and payload["source"] == msg.identity.host
    assert payload["severity"] in ("critical", "error", "warning", "info")


def test_each_text_to_pagerduty_opens_its_own_incident_and_a_resend_folds() -> None:
    """hostguard-notify text: no recovery resolves it, so one key for all would notify nobody of the second."""
    about = Identity("web-1", "text", "manual", 0, NOTICE)
    first, second = Message("deploy starts", None, about, 1000), Message("deploy done", None, about, 1060)
    keys = [body_json(post("pagerduty", m))["dedup_key"] for m in (first, second, first)]
    assert keys[0] != keys[1] and keys[0] == keys[2]
    assert all(isinstance(k, str) and k.startswith("hostguard:web-1:text:manual:") and len(k) <= 255 for k in keys)
    assert body_json(post("pagerduty", second._replace(created=1061)))["dedup_key"] != keys[1]


@given(identities, st.integers(0, 2**32))
def test_dedup_key_is_the_natural_key_within_255(ident: Identity, other_episode: int) -> None:
    key = formats.dedup_key(ident)
    assert len(key) <= 255
    assert key == formats.dedup_key(ident._replace(episode=other_episode, state=RESOLVED))
    plain = f"hostguard:{ident.host}:{ident.monitor}:{ident.condition}"
    assert key == (plain if len(plain) <= 255 else key)
    if len(plain) > 255:
        assert key.startswith("hostguard:sha256:") and len(key) == 81


@given(st.text(min_size=256, max_size=600))
def test_a_long_natural_key_is_hashed(host: str) -> None:
    ident = Identity(host, "cpu", "over", 0, FIRING)
    assert len(formats.dedup_key(ident)) == 81
    assert formats.dedup_key(ident) != formats.dedup_key(ident._replace(condition="under"))


@given(messages)
def test_generic_webhook_sends_alertmanagers_v4_shape(msg: Message) -> None:
    body = body_json(post("webhook", msg))
    assert body["version"] == "4" and body["truncatedAlerts"] == 0
    status = RESOLVED if msg.identity.state == RESOLVED else FIRING
    assert body["status"] == status
    (alert,) = body["alerts"]
    assert alert["status"] == status
    assert alert["fingerprint"] == formats.fingerprint(msg.identity) and len(alert["fingerprint"]) == 16
    assert alert["labels"]["host"] == msg.identity.host and alert["labels"]["monitor"] == msg.identity.monitor
    assert alert["annotations"]["summary"] == msg.text
    assert (alert["endsAt"] == "0001-01-01T00:00:00Z") == (status == FIRING)
    for stamp in (alert["startsAt"], alert["endsAt"]):
        assert len(stamp) == 20 and stamp.endswith("Z")
    assert set(body) == {
        "version", "groupKey", "truncatedAlerts", "receiver", "status", "alerts",
        "groupLabels", "commonLabels", "commonAnnotations", "externalURL",
    }  # fmt: skip


@given(messages)
def test_the_channel_goes_only_to_formats_with_channels(msg: Message) -> None:
    for fmt, row in formats.FORMATS.items():
        if not message.sends(fmt, msg.identity):
            continue
        req = post(fmt, msg._replace(text="t"))
        sent = "channel" in req.body.decode("utf-8")
        assert sent == (row.has_channel and msg.channel is not None), fmt


# ---- limits --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(FACTS))
@pytest.mark.parametrize("char", ["a", "é", "\u4e2d", "\U0001f600", '"', "\n"])
def test_a_long_text_is_cut_with_the_marker(fmt: str, char: str) -> None:
    limit = FACTS[fmt][1]
    msg = Message(char * (limit * 2 + 7), None, Identity("h", "m", "c", 1, FIRING))
    req = post(fmt, msg)
    text = sent_text(fmt, req)
    assert "[... cut: the message was longer than" in text
    assert text.startswith(char * 10)
    if fmt == "teams":
        assert len(req.body) <= limit
    else:
        assert len(text) == limit
        assert text.endswith(f"\n[... cut: the message was longer than {limit:,} characters]")


def sent_text(fmt: str, req: formats.Request) -> str:
    if fmt in ("slack", "mattermost", "rocketchat"):
        payload = json.loads(parse_qs(req.body.decode("ascii"))["payload"][0])
        return str(payload["text"])
    body = body_json(req)
    if fmt == "teams":
        return str(body["attachments"][0]["content"]["body"][0]["text"])
    if fmt == "pagerduty":
        return str(body["payload"]["summary"])
    if fmt == "webhook":
        return str(body["commonAnnotations"]["summary"])
    return str(body["text"] if fmt == "googlechat" else body["content"])


def test_slack_cut_is_message_cleans() -> None:
    text = "x" * 50000
    assert message.cut(text, 40000) == message.clean(text)


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30000))
def test_teams_body_never_passes_its_limit(text: str) -> None:
    req = post("teams", Message(text, None, Identity("h", "m", "c", 0, FIRING)))
    assert len(req.body) <= FACTS["teams"][1]


# ---- answers ---------------------------------------------------------------------

JSON = {"Content-Type": "application/json"}
# (format, status, headers, body, has_channel, kind, retry_after): the services' answers from
# /work/shared/research/chat-targets.md, the misleading ones included.
ANSWERS = [
    ("slack", 200, {}, b"ok", False, DELIVERED, None),
    ("slack", 404, {}, b"channel_not_found", True, CHANNEL, None),
    ("slack", 403, {}, b"invalid_token", False, WEBHOOK, None),
    ("slack", 429, {"Retry-After": "12"}, b"rate_limited", False, TRANSIENT, 12.0),
    ("slack", 429, {}, b"rate_limited", False, TRANSIENT, None),
    ("mattermost", 200, {}, b"ok", False, DELIVERED, None),
    (
        "mattermost", 400, JSON,
        b'{"id":"web.incoming_webhook.invalid.app_error","message":"Invalid webhook.","status_code":400}',
        False, WEBHOOK, None,
    ),
    ("mattermost", 501, JSON, b'{"id":"web.incoming_webhook.disabled.app_error","status_code":501}', False, WEBHOOK, None),  # noqa: E501
    ("mattermost", 403, JSON, b'{"id":"web.incoming_webhook.channel_locked.app_error"}', True, CHANNEL, None),
    ("mattermost", 500, JSON, b'{"id":"web.incoming_webhook.channel.app_error"}', True, CHANNEL, None),
    ("mattermost", 500, JSON, b'{"id":"web.incoming_webhook.channel.app_error"}', False, TRANSIENT, None),
    ("mattermost", 400, JSON, b'{"id":"web.incoming_webhook.text.app_error"}', False, MESSAGE, None),
    ("rocketchat", 200, JSON, b'{"success":true}', False, DELIVERED, None),
    ("rocketchat", 404, JSON, b'{"success":false,"error":"Invalid integration id or token provided."}', False, WEBHOOK, None),  # noqa: E501
    ("rocketchat", 503, {}, b"Service Unavailable", False, TRANSIENT, None),
    ("rocketchat", 400, JSON, b'{"success":false,"error":"overriding destination channel is disabled"}', True, CHANNEL, None),  # noqa: E501
    ("rocketchat", 400, JSON, b'{"success":false,"error":"bad"}', False, MESSAGE, None),
    ("rocketchat", 429, {}, b"", False, TRANSIENT, 60.0),
    ("teams", 202, {}, b"", False, DELIVERED, None),
    ("teams", 200, {}, b"", False, DELIVERED, None),
    (
        "teams", 400, JSON,
        b'{"error":{"code":"WorkflowTriggerIsNotEnabled","message":"The workflow is in state Disabled."}}',
        False, WEBHOOK, None,
    ),
    ("teams", 404, JSON, b'{"error":{"code":"WorkflowNotFound","message":"x"}}', False, WEBHOOK, None),
    ("teams", 401, JSON, b'{"error":{"code":"DirectApiAuthorizationRequired","message":"x"}}', False, WEBHOOK, None),
    ("teams", 400, JSON, b'{"error":{"code":"InvalidRequestContent","message":"x"}}', False, MESSAGE, None),
    ("teams", 429, {}, b"", False, TRANSIENT, 30.0),
    ("teams", 429, {"retry-after": "7"}, b"", False, TRANSIENT, 7.0),
    ("googlechat", 200, JSON, b'{"name":"spaces/A/messages/1","thread":{"name":"spaces/A/threads/k"}}', False, DELIVERED, None),  # noqa: E501
    (
        "googlechat", 400, JSON,
        b'{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT",'
        b'"details":[{"reason":"API_KEY_INVALID"}]}}',
        False, WEBHOOK, None,
    ),
    ("googlechat", 403, JSON, b'{"error":{"code":403,"status":"PERMISSION_DENIED"}}', False, WEBHOOK, None),
    ("googlechat", 404, JSON, b'{"error":{"code":404,"status":"NOT_FOUND"}}', False, WEBHOOK, None),
    ("googlechat", 400, JSON, b'{"error":{"code":400,"status":"INVALID_ARGUMENT"}}', False, MESSAGE, None),
    ("googlechat", 429, JSON, b'{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}', False, TRANSIENT, 5.0),
    ("discord", 200, JSON, b'{"id":"123"}', False, DELIVERED, None),
    ("discord", 204, {}, b"", False, DELIVERED, None),
    ("discord", 404, JSON, b'{"message":"Unknown Webhook","code":10015}', False, WEBHOOK, None),
    ("discord", 401, JSON, b'{"message":"Invalid Webhook Token","code":50027}', False, WEBHOOK, None),
    ("discord", 400, JSON, b'{"message":"Webhooks posted to forum channels must have a thread_name or thread_id","code":220001}', False, WEBHOOK, None),  # noqa: E501
    ("discord", 400, JSON, b'{"message":"Cannot send an empty message","code":50006}', False, MESSAGE, None),
    ("discord", 429, {"Retry-After": "65"}, b'{"message":"rate","retry_after":64.57,"global":false}', False, TRANSIENT, 65.0),  # noqa: E501
    ("discord", 429, {"Retry-After": "1"}, b'{"message":"rate","retry_after":2.5,"global":false}', False, TRANSIENT, 3.0),  # noqa: E501
    ("discord", 502, {}, b"", False, TRANSIENT, None),
    ("pagerduty", 202, JSON, b'{"status":"success","message":"Event processed","dedup_key":"k"}', False, DELIVERED, None),  # noqa: E501
    (
        "pagerduty", 400, JSON,
        b'{"status":"invalid event","message":"Event object is invalid",'
        b'"errors":["Length of \'routing_key\' is incorrect (should be 32 characters)"]}',
        False, WEBHOOK, None,
    ),
    (
        "pagerduty", 400, JSON, b'{"status":"invalid event","errors":["\'payload.summary\' is missing"]}',
        False, MESSAGE, None,
    ),
    ("pagerduty", 429, {}, b"", False, TRANSIENT, 30.0),
    ("pagerduty", 500, {}, b"", False, TRANSIENT, None),
    ("webhook", 200, {}, b"", False, DELIVERED, None),
    ("webhook", 410, {}, b"gone", False, WEBHOOK, None),
    ("webhook", 422, {}, b"bad", False, MESSAGE, None),
    ("webhook", 429, {}, b"", False, TRANSIENT, None),
]  # fmt: skip


@pytest.mark.parametrize(("fmt", "status", "headers", "body", "channel", "kind", "wait"), ANSWERS)
def test_each_services_answers(
    fmt: str, status: int, headers: dict[str, str], body: bytes, channel: bool, kind: str, wait: float | None
) -> None:
    retry_after = next((value for name, value in headers.items() if name.lower() == "retry-after"), None)
    answer = answers.classify(fmt, Reply(status, retry_after, body.decode("utf-8", "replace")), channel)
    assert (answer.kind, answer.retry_after, answer.status) == (kind, wait, status)
    assert answer.reason.startswith(f"HTTP {status}")


def test_every_service_has_success_and_webhook_refusal_rows() -> None:
    for fmt in FACTS:
        kinds = {row[5] for row in ANSWERS if row[0] == fmt}
        assert {DELIVERED, WEBHOOK, TRANSIENT} <= kinds, fmt


@given(st.sampled_from(list(FACTS)), st.integers(100, 599), st.binary(max_size=200), st.booleans())
def test_every_answer_gets_one_of_the_five_kinds(fmt: str, status: int, body: bytes, channel: bool) -> None:
    answer = answers.classify(fmt, Reply(status, None, body.decode("utf-8", "replace")), channel)
    assert answer.kind in (DELIVERED, TRANSIENT, MESSAGE, CHANNEL, WEBHOOK)
    assert (answer.kind == DELIVERED) == (200 <= status < 300)
    assert answer.kind != CHANNEL or channel
    assert answer.retry_after is None or answer.kind == TRANSIENT
    assert len(answer.reason) <= len(f"HTTP {status} ") + answers.ERROR_MAX
    assert answer.reason.isascii() and answer.reason.isprintable()


def test_only_discord_is_never_probed() -> None:
    assert [fmt for fmt, row in formats.FORMATS.items() if row.never_probe] == ["discord"]


# ---- detection -------------------------------------------------------------------

DETECTED = [
    (URLS["slack"], "slack"),
    ("https://hooks.slack-gov.com/services/T/B/X", "slack"),
    ("https://HOOKS.SLACK.COM./services/T/B/X", "slack"),
    (URLS["teams"], "teams"),
    ("https://prod-12.westeurope.logic.azure.com:443/workflows/0123/triggers/manual/paths/invoke?sig=x", "teams"),
    (URLS["googlechat"], "googlechat"),
    (URLS["discord"], "discord"),
    ("https://discordapp.com/api/webhooks/1/t", "discord"),
    ("https://ptb.discord.com/api/v10/webhooks/1/t", "discord"),
    ("https://canary.discordapp.com/api/webhooks/1/t", "discord"),
    (URLS["pagerduty"], "pagerduty"),
    ("https://events.eu.pagerduty.com/v2/enqueue", "pagerduty"),
    (URLS["mattermost"], "slack"),
    (URLS["rocketchat"], "slack"),
    ("https://notdiscord.com/api/webhooks/1/t", "slack"),
    ("https://discord.com.example.org/x", "slack"),
    ("https://user:pw@hook.test:8443/x", "slack"),
]


@pytest.mark.parametrize(("url", "fmt"), DETECTED)
def test_detection_from_the_host(url: str, fmt: str) -> None:
    assert urltext.detect(url) == fmt
    assert urltext.detect(url, fmt) == fmt


@pytest.mark.parametrize("fmt", ["mattermost", "rocketchat", "webhook", "teams", "discord"])
def test_an_unknown_host_takes_any_configured_format(fmt: str) -> None:
    assert urltext.detect("https://chat.example.org/hooks/x", fmt) == fmt


@pytest.mark.parametrize(
    ("url", "fmt"),
    [(URLS["googlechat"], "slack"), (URLS["discord"], "slack"), (URLS["slack"], "teams"), (URLS["teams"], "webhook")],
)
def test_a_contradiction_is_refused_naming_the_key(url: str, fmt: str) -> None:
    with pytest.raises(urltext.FormatError) as refused:
        urltext.detect(url, fmt)
    assert "hostguard:chatFormat" in str(refused.value) and urltext.detect(url) in str(refused.value)
    assert url not in str(refused.value) and str(urlsplit(url).hostname) not in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "https://contoso.webhook.office.com/webhookb2/abc@def/IncomingWebhook/0123/4567",
        "https://WEBHOOK.office.com/webhookb2/x",
        "https://outlook.office.com/webhook/abc/IncomingWebhook/def",
        "https://outlook.office365.com/webhook/abc",
    ],
)
def test_a_retired_teams_connector_is_refused(url: str) -> None:
    for configured in ("", "teams"):
        with pytest.raises(urltext.FormatError) as refused:
            urltext.detect(url, configured)
        assert "hostguard:webhookUrl" in str(refused.value) and "Workflows" in str(refused.value)
        assert url not in str(refused.value) and "/webhook" not in str(refused.value)


def test_discords_slack_endpoint_is_refused() -> None:
    with pytest.raises(urltext.FormatError, match="hostguard:webhookUrl is Discord's Slack-compatible endpoint"):
        urltext.detect(URLS["discord"] + "/slack")


def test_outlook_elsewhere_is_not_a_connector() -> None:
    assert urltext.detect("https://outlook.office.com/owa/x") == "slack"


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(urltext.FormatError, match="hostguard:chatFormat must be one of slack, mattermost"):
        urltext.detect(URLS["slack"], "msteams")


def test_pagerduty_severity_by_what_fired() -> None:
    def severity(monitor: str, condition: str) -> object:
        msg = Message("x", None, Identity("web-1", monitor, condition, 1000, FIRING))
        return body_json(post("pagerduty", msg))["payload"]["severity"]

    assert severity("container", "stopped web") == "error" and severity("host", "cpu") == "warning"
    assert severity("hostguard", "connectivity-test") == "info" and severity("hostguard", "merged") == "warning"


# ---- text a container or image controls --------------------------------------

HOSTILE_ERROR = (
    "<!channel> <!here> <!everyone> @here @channel @all @everyone @admin <users/all> <@U123>"
    " <https://evil.example/x|the runbook> [the runbook](https://evil.example/y) &lt;!channel&gt;"
)
MENTIONS = {
    "slack": ("<!", "<@", "<http"),
    "mattermost": ("<!", "<http", "@here", "@channel", "@all", "@everyone", "@admin", "](http"),
    "rocketchat": ("<!", "<http", "@here", "@all", "@admin", "](http"),
    "googlechat": ("<users/all>", "<http", "](http"),
    "teams": ("](http",),
    "discord": ("](http",),
}


def shown_text(fmt: str, req: formats.Request) -> str:
    """The text field of a request body as sent on the wire (Slack's form decoded, JSON decoded)."""
    if fmt in ("slack", "mattermost", "rocketchat"):
        return str(json.loads(parse_qs(req.body.decode("ascii"))["payload"][0])["text"])
    body = body_json(req)
    if fmt == "teams":
        return str(body["attachments"][0]["content"]["body"][0]["text"])
    return str(body["content" if fmt == "discord" else "text"])


@pytest.mark.parametrize("fmt", sorted(MENTIONS))
def test_no_mention_or_disguised_link_of_a_container_error_passes(fmt: str) -> None:
    """Issue 43 item 9: docker's .State.Error reached Slack, Mattermost and Rocket.Chat as markup."""
    text = f"[Container Alert] \nContainer stopped: web (Status: exited)\nExit Code: 1\nError: {HOSTILE_ERROR}"
    sent = shown_text(fmt, post(fmt, Message(text, None, Identity("h", "container", "stopped", 1, FIRING))))
    for syntax in MENTIONS[fmt]:
        assert syntax not in sent, (syntax, sent)
    shown = sent.replace("\u2060", "")
    if fmt in ("slack", "mattermost", "rocketchat"):
        assert "&lt;!channel&gt;" in sent and "&amp;lt;!channel&amp;gt;" in sent
        shown = shown.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert shown == text, "the text reads as it was, only inert"


spec_texts = st.text(st.characters(blacklist_characters="&<>@]", blacklist_categories=("Cs",)), max_size=300)


@given(spec_texts, st.sampled_from(sorted(FACTS)))
def test_text_without_markup_characters_is_sent_byte_for_byte(text: str, fmt: str) -> None:
    """Every text of the SPEC (no & < > @ or ]) is untouched by the escaping, in every format."""
    assert formats.inert(fmt, text) == text
