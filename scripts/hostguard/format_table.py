"""The chat formats' table, generated from components/chatFormats.ts.

Do not edit the block below by hand: `npm run settings:gen` writes it, and a
unit test fails when it differs from the TypeScript table.
"""

# BEGIN format table (generated from components/chatFormats.ts by `npm run settings:gen`; do not edit)
# fmt: off
# format: (has_channel, text_limit, backoff seconds after a 429 without Retry-After, never_probe, title,
#          pace: seconds between two posts)
FACTS: dict[str, tuple[bool, int, int, bool, str, float]] = {
    "slack": (True, 40000, 0, False, "Slack", 1.05),
    "mattermost": (True, 16383, 0, False, "Mattermost", 1.05),
    "rocketchat": (True, 40000, 60, False, "Rocket.Chat", 6.1),
    "teams": (False, 24000, 30, False, "Microsoft Teams (Workflows)", 1.05),
    "googlechat": (False, 4000, 5, False, "Google Chat", 1.05),
    "discord": (False, 2000, 5, True, "Discord", 2.05),
    "pagerduty": (False, 1024, 30, False, "PagerDuty Events API v2", 0.55),
    "webhook": (False, 40000, 0, False, "generic webhook (Alertmanager's JSON)", 1.05),
}
# (host, any name under it too, format): the hosts that name their format
HOSTS: tuple[tuple[str, bool, str], ...] = (
    ("hooks.slack.com", False, "slack"),
    ("hooks.slack-gov.com", False, "slack"),
    ("chat.googleapis.com", False, "googlechat"),
    ("discord.com", True, "discord"),
    ("discordapp.com", True, "discord"),
    ("api.powerplatform.com", True, "teams"),
    ("logic.azure.com", True, "teams"),
    ("events.pagerduty.com", False, "pagerduty"),
    ("events.eu.pagerduty.com", False, "pagerduty"),
)
# (host, any name under it too, path prefix): retired Teams connectors
RETIRED: tuple[tuple[str, bool, str], ...] = (
    ("webhook.office.com", True, ""),
    ("outlook.office.com", False, "/webhook"),
    ("outlook.office365.com", False, "/webhook"),
)
PAGERDUTY_URLS: dict[str, str] = {
    "us": "https://events.pagerduty.com/v2/enqueue",
    "eu": "https://events.eu.pagerduty.com/v2/enqueue",
}
RETIRED_HINT: str = "a Microsoft Teams Office 365 connector URL: Microsoft switched these off in May 2026; create a Workflows webhook (Teams: the channel's ... > Workflows > \"Send webhook alerts to a channel\") and set its URL"  # noqa: E501
# PagerDuty's routing key (the webhook file's routing_key=)
ROUTING_KEY_RE: str = "^[A-Za-z0-9]{32}$"
# fmt: on
# END format table
