"""The text of the secret URL files (webhook.curlrc, heartbeat.curlrc): `KEY=VALUE` lines.

The webhook file holds `url=` (one URL of the one URL rule, settings_table.URL_RE) and may hold
`format=` (a chat format of format_table.FACTS) and PagerDuty's `routing_key=`; the heartbeat file
holds `url=` alone. Each key at most once, `url=` exactly once, the value up to the end of the line,
blank lines aside. `install set-webhook` writes the file with `text`; it, the notifier and the
redaction read it with `parse` or `lines`. Errors name the file and the line, never a value.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .errors import ConfigError
from .format_table import FACTS, ROUTING_KEY_RE
from .settings_table import URL_RE

KEYS = {"webhook": ("url", "format", "routing_key"), "heartbeat": ("url",)}
_RULES = {"url": URL_RE, "format": "|".join(FACTS), "routing_key": ROUTING_KEY_RE}
_LINES = {"webhook": "a url=https://..., format= or routing_key= line", "heartbeat": "a url=https://... line"}
_ALLOWED = {
    "url": "not one https:// URL: a host name or [IPv6] address, an optional port, path and query of RFC 3986"
    " characters; no fragment (#), quote, space, { } [ ] | ^ ` < > or control character",
    "format": f"not one of {', '.join(FACTS)}",
    "routing_key": "not 32 letters and digits",
}


class UrlText(NamedTuple):
    """A URL file's values: the URL, the chat format ("" when none) and PagerDuty's routing key ("" when none)."""

    url: str
    format: str = ""
    routing_key: str = ""


def lines(text: str) -> list[tuple[int, str, str]]:
    """(number, key, value) of each non-blank line of TEXT, split at its first `=` (key "" when it has none)."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):
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
            raise ConfigError(f"{where} line {number}: not {_LINES[what]} (line not shown)")
        if key in found:
            raise ConfigError(f"{where} line {number}: a second {key}= line")
        if not value.isascii() or not re.fullmatch(_RULES[key], value):
            raise ConfigError(f"{where} line {number}: {key}= is refused: {_ALLOWED[key]} (value not shown)")
        found[key] = value
    if "url" not in found:
        raise ConfigError(f"{where} holds no url=https://... line")
    return UrlText(found["url"], found.get("format", ""), found.get("routing_key", ""))


def text(values: UrlText) -> str:
    """The file's text of VALUES, as `parse` returned them: url=, then format= and routing_key= when set."""
    return "".join(f"{key}={value}\n" for key, value in zip(KEYS["webhook"], values) if value)
