"""urlfile.load and webhook.py: the webhook file's format, checked against its URL's host and the routing
key, as the delivery run and --test load it; errors name the file, never the URL or the key; the refusal's
probing."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from hostguard import redact, settings
from hostguard.errors import ConfigError
from hostguard.notify import delivery, urlfile, webhook
from hostguard.notify.urlfile import Hook

KEY = "SENTINELsecret0123456789abcdef01"
PD = "https://events.pagerduty.com/v2/enqueue"


CONTEXT = ssl.create_default_context()


def hook_of(root: Path, text: str) -> Hook:
    conf = root / "etc/hostguard"
    conf.mkdir(parents=True, exist_ok=True)
    path = conf / "webhook.conf"
    path.write_text(text)
    path.chmod(0o600)
    return urlfile.load(settings.parse("", "hostguard.conf"))


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("url=https://hooks.slack.com/services/T/B/SENTINELsecret\n", "slack"),
        ("url=https://chat.example.org/hooks/SENTINELsecret\n", "slack"),
        ("url=https://chat.example.org/hooks/SENTINELsecret\nformat=mattermost\n", "mattermost"),
        ("url=https://discord.com/api/webhooks/1/SENTINELsecret\n", "discord"),
        ("url=https://chat.googleapis.com/v1/spaces/A/messages?key=k&token=SENTINELsecret\n", "googlechat"),
        (f"url={PD}\nrouting_key={KEY}\n", "pagerduty"),
        (f"url={PD}\nformat=pagerduty\nrouting_key={KEY}\n", "pagerduty"),
    ],
)
def test_the_format_is_the_files_else_the_hosts_else_slack(root: Path, text: str, fmt: str) -> None:
    hook = hook_of(root, text)
    assert (hook.format, hook.key) == (fmt, KEY if fmt == "pagerduty" else "")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("url=https://discord.com/api/webhooks/1/SENTINELsecret\nformat=slack\n", "set it to discord"),
        ("url=https://x.webhook.office.com/webhookb2/SENTINELsecret\n", "switched these off"),
        (f"url={PD}\n", "format pagerduty needs a routing_key"),
        (
            f"url=https://chat.example.org/hooks/SENTINELsecret\nrouting_key={KEY}\n",
            "for format pagerduty only",
        ),
    ],
)
def test_a_contradiction_is_refused_naming_the_file(root: Path, text: str, why: str) -> None:
    with pytest.raises(ConfigError) as caught:
        hook_of(root, text)
    message = str(caught.value)
    assert why in message and str(root / "etc/hostguard/webhook.conf") in message
    assert "SENTINEL" not in message and caught.value.code == 78


def test_the_routing_key_is_redacted_like_the_url(root: Path) -> None:
    hook_of(root, f"url={PD}\nrouting_key={KEY}\n")
    redact.forget()
    assert redact.redact(f'{{"routing_key":"{KEY}"}}') == f'{{"routing_key":"{redact.REDACTED}"}}'
    assert urlfile.read(urlfile.webhook_path()).routing_key == KEY


def test_only_discords_gone_or_invalid_webhook_is_never_probed() -> None:
    discord = Hook("https://discord.com/api/webhooks/1/x", "id", CONTEXT, "discord")
    slack = Hook("https://hooks.slack.com/services/T/B/x", "id", CONTEXT, "slack")
    assert webhook.stopped(discord, "HTTP 404 Unknown Webhook") and webhook.stopped(discord, "HTTP 401 x")
    # A proxy's 403 in front of Discord, or any other service's 404, is probed with the back-off.
    assert not webhook.stopped(discord, "HTTP 403 <html>") and not webhook.stopped(slack, "HTTP 404 no_service")
    assert "hostguard-notify --test delivers" in webhook.next_probe(discord, "HTTP 404 x", 600)
    assert webhook.next_probe(slack, "HTTP 404 no_service", 600) == "next probe in 600s"


def test_the_dropped_note_survives_the_formats_cut_and_pagerduty_gets_none() -> None:
    discord = Hook("https://discord.com/api/webhooks/1/x", "id", CONTEXT, "discord")
    text, announced = delivery.with_dropped_note(discord, "x" * 5000, 3)
    assert len(text) <= 2000 and text.endswith(delivery.DROPPED_NOTE.format(3)) and announced == 3
    pagerduty = Hook(PD, "id", CONTEXT, "pagerduty", KEY)
    assert delivery.with_dropped_note(pagerduty, "alert", 3) == ("alert", 0)
    assert delivery.with_dropped_note(discord, "alert", 0) == ("alert", 0)
