"""Redaction: every form of the secret URLs leaves no trace in a text that leaves the host."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote, unquote, unquote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostguard import redact

SEGMENT = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789-_~", min_size=16, max_size=30)


def lower_escapes(text: str) -> str:
    """TEXT with its %XX escapes in lower-case hex (as some services echo a path)."""
    parts = text.split("%")
    return parts[0] + "".join("%" + p[:2].lower() + p[2:] for p in parts[1:])


def with_secret_file(tmp: Path, url: str) -> None:
    hook = tmp / "webhook.conf"
    hook.write_text(f"url={url}\n")
    redact.forget()
    redact._pieces = redact.load((str(hook),))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(SEGMENT, min_size=1, max_size=3),
    st.sampled_from(["hooks.example.com", "[2001:db8::1]:8443"]),
    st.text(max_size=40),
)
def test_every_form_of_the_url_is_redacted(
    tmp_path_factory: object, segments: list[str], host: str, noise: str
) -> None:
    tmp = tmp_path_factory.mktemp("r")  # type: ignore[attr-defined]
    path = "/services/" + "/".join(segments) + "?k=v%20w"
    url = f"https://{host}{path}"
    with_secret_file(tmp, url)
    secret = segments[-1]
    forms = [
        url,
        host + path,
        path,
        path.lstrip("/"),
        secret,
        quote(url, safe=""),
        lower_escapes(quote(path, safe="")),
        json.dumps(url),
        json.dumps({"error": f"Cannot POST {path}"}),
        url.replace("/", "\\/"),
    ]
    for form in forms:
        text = redact.redact(f"{noise} {form} {noise}")
        assert secret not in text, form
        assert quote(secret, safe="") not in text
        assert redact.REDACTED in text


def test_every_url_and_routing_key_value_is_read_even_from_a_file_the_notifier_refuses(tmp_path: Path) -> None:
    """The file's url= and routing_key= values (urltext.lines), whatever else it holds; no value too short to
    be a secret, nor the format, is redacted on its own."""
    hook = tmp_path / "webhook.conf"
    key = "RoutingKey0123456789abcdefABCDEF"
    hook.write_text(
        f"garbage line\nurl=http://h.example/a/SecretSegment01\nformat=discord\nrouting_key={key}\nrouting_key=short\n"
    )
    redact.forget()
    redact._pieces = redact.load((str(hook),))
    text = redact.redact(f"POST /a/SecretSegment01 with {key}: short answer from discord")
    assert text == f"POST {redact.REDACTED} with {redact.REDACTED}: short answer from discord"


def test_without_secret_files_text_is_unchanged(root: Path) -> None:
    assert redact.redact("HTTP 403 invalid_token /services/T0/B0") == "HTTP 403 invalid_token /services/T0/B0"


def test_a_percent_encoded_query_secret_is_redacted(tmp_path: Path) -> None:
    """A token whose URL-encoded form shares no plain piece (key=...&token=..., as Google Chat's): only
    the percent-encoded forms catch it, in either case of hex."""
    url = "https://chat.example.com/v1/spaces/AAAA/messages?key=PublicKey1&token=Secr3tT0kenValue42"
    with_secret_file(tmp_path, url)
    query = "key=PublicKey1&token=Secr3tT0kenValue42"
    for form in (quote(query, safe=""), lower_escapes(quote(query, safe="")), quote(url, safe="")):
        assert "Secr3tT0kenValue42" in form
        text = redact.redact(f"the service said: Cannot POST {form}!")
        assert "Secr3tT0kenValue42" not in text, form
        assert redact.REDACTED in text


TEAMS = (
    "https://prod-00.westus.logic.azure.com:443/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke"
    "?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=AbC%2BdEf_gHiJkLmN%2FoPqRsTuVwXyZ012345%3D"
)
GOOGLE = (
    "https://chat.googleapis.com/v1/spaces/AAAAbcdEfgh/messages?key=AIzaSyDdI0hCZtE6vySjMm&token=Tok%3DEn-secret_42"
)


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        (TEAMS, "AbC%2BdEf_gHiJkLmN%2FoPqRsTuVwXyZ012345%3D"),
        (GOOGLE, "Tok%3DEn-secret_42"),
        ("https://hooks.example.com/notify?token=Z9y8X7w6V5u4T3s2&channel=ops", "Z9y8X7w6V5u4T3s2"),
    ],
)
def test_a_query_value_is_redacted_alone_and_percent_decoded(tmp_path: Path, url: str, secret: str) -> None:
    """A service echoes one query value, or the query percent-decoded (`sig=AbC+dEf...=`)."""
    with_secret_file(tmp_path, url)
    query = url.split("?", 1)[1]
    for form in (secret, unquote(secret), unquote_plus(secret), unquote(query), f"sig={unquote(secret)}"):
        text = redact.redact(f"HTTP 401 bad signature {form} for this request")
        assert unquote(secret) not in text and secret not in text, form
        assert redact.REDACTED in text


@pytest.mark.parametrize("url", [GOOGLE, TEAMS, "https://events.pagerduty.com/v2/enqueue"])
def test_a_fixed_path_word_is_never_redacted(tmp_path: Path, url: str) -> None:
    """Google Chat's `messages`, Teams' `invoke` and `api-version`, PagerDuty's whole (public) URL."""
    with_secret_file(tmp_path, url)
    for text in (
        "delivered 3 messages; 2 messages kept",
        "POST /v2/enqueue: HTTP 429 (api-version 2016-06-01, /triggers/manual/run)",
        "https://events.pagerduty.com/v2/enqueue answered 202",
    ):
        assert redact.redact(text) == text
