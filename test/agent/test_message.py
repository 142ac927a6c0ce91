"""A message's text through message.clean and Slack's request (formats.request), decoded as the chat service does.

These replace test/payload/json.bats, which checked the bash JSON escaper:
hostile input (quotes, backslashes, every control character, multibyte,
emoji, shell metacharacters, JSON-looking text) must come back exactly.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostguard.notify.formats import request
from hostguard.notify.message import CUT_MARKER, NOTICE, TEXT_MAX, Identity, Message, clean, labelled

ABOUT = Identity("web-1", "text", "manual", 0, NOTICE)


def form_body(text: str, channel: str | None) -> bytes:
    """The body of TEXT (with CHANNEL) as Slack's format posts it."""
    return request("slack", "https://hooks.slack.com/services/T/B/x", "", Message(text, channel, ABOUT)).body


def payload(text: str, channel: str | None) -> str:
    """The form field `payload` of that body: the JSON as sent."""
    return parse_qs(form_body(text, channel).decode("ascii"), strict_parsing=True)["payload"][0]


HOSTILE = {
    "quotes": 'say "hi" \'there\' ""',
    "backslashes": "a\\b\\\\c\\",
    "lone_u": "\\u \\u12 \\ud800 \\u0041 \\\\u0041 \\x41 \\n",
    "tab_cr_lf": "a\tb\rc\r\nd\n",
    "every_control": "".join(chr(c) for c in range(1, 32)) + "\x7f",
    "nul": "a\x00b",
    "multibyte": "héllo wörld \u2013 ¿qué? 日本語 Ελληνικά",
    "emoji": "🚀 rocket 👩‍💻 ✅ \U0001f600",
    "shell_meta": "$(id) `id` ${HOME} %s %d & && \\& * ? [a] ~ !",
    "json_like": '{"text":"x","channel":"#y"}\\n',
    "form_like": "payload=x&payload=y%26z+1",
    "empty": "",
    "container_name": 'web "prod"\\1\t\x1b[31mred\x1b[0m',
    "long": 'x"\\\n\x01é🚀' * 500,
}


def decoded(body: bytes) -> dict[str, object]:
    """The body as the chat service reads it: one form field `payload`, strict JSON."""
    form = parse_qs(body.decode("ascii"), keep_blank_values=True, strict_parsing=True)
    assert list(form) == ["payload"] and len(form["payload"]) == 1
    value = json.loads(form["payload"][0])
    assert isinstance(value, dict)
    # Slack shows its three escapes as the characters they stand for (formats.inert).
    value["text"] = value["text"].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return value


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_round_trips(name: str) -> None:
    text = HOSTILE[name]
    assert decoded(form_body(text, None)) == {"text": text}


def test_the_specs_newline_is_backslash_n_and_the_quote_backslash_quote() -> None:
    text = 'Ban Alert(x)\n Banned IP: *"1.2.3.4"*\\'
    assert payload(text, None) == '{"text":"Ban Alert(x)\\n Banned IP: *\\"1.2.3.4\\"*\\\\"}'


def test_control_characters_are_escaped_as_u00xx() -> None:
    assert payload("a\x01b\x1bc", None) == '{"text":"a\\u0001b\\u001bc"}'
    assert all(not 0 <= ord(c) < 0x20 for c in payload(HOSTILE["every_control"], None))


def test_channel_override_is_one_hash_and_last() -> None:
    assert payload("t", "alerts") == '{"text":"t","channel":"#alerts"}'
    assert payload("t", "#ops") == '{"text":"t","channel":"#ops"}'


def test_invalid_utf8_from_argv_becomes_u_fffd() -> None:
    raw = b"web\xff\xfe-\xe6\x97 ok \xc3\xa9".decode("utf-8", "surrogateescape")
    assert clean(raw) == "web\ufffd\ufffd-\ufffd ok \u00e9"


def test_a_long_text_is_cut_with_the_marker() -> None:
    text = clean("é" * 50000)
    assert len(text) == TEXT_MAX and text.endswith(CUT_MARKER)


def test_the_host_label() -> None:
    assert labelled("x", True, "web-1") == "[web-1] x"
    assert labelled("x", False, "web-1") == "x"


@given(st.text())
def test_any_text_round_trips(text: str) -> None:
    # What argv or a monitor hands over: cleaned first (lone surrogates are not text).
    sent = clean(text)
    assert decoded(form_body(sent, None)) == {"text": sent}


@given(st.binary(max_size=300))
def test_any_bytes_from_argv_become_valid_text(raw: bytes) -> None:
    text = clean(raw.decode("utf-8", "surrogateescape"))
    text.encode("utf-8")  # no lone surrogate left
    assert decoded(form_body(text, "a.b_c-1")) == {"text": text, "channel": "#a.b_c-1"}
