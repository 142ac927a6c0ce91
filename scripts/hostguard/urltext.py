"""The text of the secret URL files (webhook.conf, heartbeat.conf): `KEY=VALUE` lines.

The webhook file holds `url=` (one URL of the one URL rule, settings_table.URL_RE) and may hold
`format=` (a chat format of format_table.FACTS; none: the URL's host names it, else slack) and
PagerDuty's `routing_key=`, exactly for format pagerduty; the heartbeat file holds `url=` alone.
Each key at most once, `url=` exactly once, the value up to the end of the line (one trailing CR, of a
file saved with CRLF endings, is not part of it), blank lines aside; no comments, spaces or quotes around a
value. At most MAX_BYTES bytes, the one limit of the file's writer (set-webhook) and readers.
`install set-webhook` writes the file with `text`; it, the notifier and the redaction read it with
`parse` or `lines`. Errors name the file and the line or key, never a value.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import urlsplit

from .errors import ConfigError
from .format_table import FACTS, HOSTS, RETIRED, RETIRED_HINT, ROUTING_KEY_RE
from .settings_table import URL_RE

FORMAT_KEY = "hostguard:chatFormat"
URL_KEY = "hostguard:webhookUrl"

MAX_BYTES = 65536
KEYS = {"webhook": ("url", "format", "routing_key"), "heartbeat": ("url",)}
_RULES = {"url": URL_RE, "format": "|".join(FACTS), "routing_key": ROUTING_KEY_RE}
_LINES = {"webhook": "a url=https://..., format= or routing_key= line", "heartbeat": "a url=https://... line"}
_ALLOWED = {
    "url": "not one https:// URL: a host name or [IPv6] address, an optional port, path and query of RFC 3986"
    " characters; no fragment (#), quote, space, { } [ ] | ^ ` < > or control character",
    "format": f"not one of {', '.join(FACTS)}",
    "routing_key": "not 32 letters and digits",
}
_FORM = "write each line as KEY=VALUE, e.g. url=https://..., without spaces around = or quotes"


class UrlText(NamedTuple):
    """A URL file's values: the URL, its format= ("" when none) and PagerDuty's routing key ("" when none);
    and the webhook's chat format (format=, else its host's, else slack; "" for the heartbeat)."""

    url: str
    format: str = ""
    routing_key: str = ""
    chat: str = ""


class FormatError(ValueError):
    """A format or URL refused; the text names the key, never the URL."""


def lines(text: str) -> list[tuple[int, str, str]]:
    """(number, key, value) of each non-blank line of TEXT, split at its first `=` (key "" when it has none),
    without the line's one trailing CR."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line[:-1] if line.endswith("\r") else line
        if line:
            key, _, value = line.partition("=") if "=" in line else ("", "", line)
            found.append((number, key, value))
    return found


def parse(text: str, where: str, what: str = "webhook") -> UrlText:
    """The checked values of TEXT, the WHAT file's (webhook, heartbeat); ConfigError naming WHERE and the line."""
    keys = KEYS[what]
    found: dict[str, str] = {}
    for number, key, value in lines(text):
        if key not in keys:
            hint = f": {_FORM}" if key.strip() in keys or (key or value).lstrip().startswith("#") else ""
            raise ConfigError(f"{where} line {number}: not {_LINES[what]} (line not shown){hint}")
        if key in found:
            raise ConfigError(f"{where} line {number}: a second {key}= line")
        if not value.isascii() or not re.fullmatch(_RULES[key], value):
            hint = f"; {_FORM}" if value.strip(" \t\"'") != value else ""
            raise ConfigError(f"{where} line {number}: {key}= is refused: {_ALLOWED[key]} (value not shown){hint}")
        found[key] = value
    if "url" not in found:
        raise ConfigError(f"{where} holds no url=https://... line")
    values = UrlText(found["url"], found.get("format", ""), found.get("routing_key", ""))
    if what != "webhook":
        return values
    try:
        return values._replace(chat=checked(values.url, values.format, values.routing_key))
    except FormatError as error:
        raise ConfigError(f"{where}: {error}") from None


def text(values: UrlText) -> str:
    """The file's text of VALUES, as `parse` returned them: url=, then format= and routing_key= when set."""
    return "".join(f"{key}={value}\n" for key, value in zip(KEYS["webhook"], values[:3]) if value)


def _matches(host: str, suffix: bool, name: str) -> bool:
    return name == host or (suffix and name.endswith("." + host))


def host_of(url: str) -> str:
    """URL's host name, lower case, without a trailing dot or brackets; "" when there is none."""
    try:
        name = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""
    return name.lower().rstrip(".")


def detect(url: str, configured: str = "") -> str:
    """The format of URL: CONFIGURED (checked against a known host), else the host's, else slack.
    FormatError naming the key for an unknown format, a contradiction or a retired Teams connector."""
    name = host_of(url)
    path = urlsplit(url.strip()).path.lower()
    if any(_matches(host, suffix, name) and path.startswith(prefix) for host, suffix, prefix in RETIRED):
        raise FormatError(f"{URL_KEY} is {RETIRED_HINT} (URL not shown)")
    if configured and configured not in FACTS:
        raise FormatError(f"{FORMAT_KEY} must be one of {', '.join(FACTS)}, got {configured!r}")
    known = next((fmt for host, suffix, fmt in HOSTS if _matches(host, suffix, name)), None)
    if known == "discord" and path.rstrip("/").endswith("/slack"):
        raise FormatError(f"{URL_KEY} is Discord's Slack-compatible endpoint: remove the trailing /slack")
    if configured and known is not None and known != configured:
        raise FormatError(f"{FORMAT_KEY} is {configured}, but {URL_KEY} is a {FACTS[known][4]} URL: set it to {known}")
    return configured or known or "slack"


def checked(url: str, configured: str, routing_key: str) -> str:
    """The format of a webhook file's URL, format= and routing_key= (detect), the key present exactly
    for PagerDuty; FormatError naming what is amiss (never the URL or the key)."""
    fmt = detect(url, configured)
    if fmt == "pagerduty" and not routing_key:
        raise FormatError("format pagerduty needs a routing_key= line (hostguard:pagerdutyRoutingKey)")
    if fmt != "pagerduty" and routing_key:
        raise FormatError(f"a routing_key line is for format pagerduty only, not {fmt}")
    return fmt
