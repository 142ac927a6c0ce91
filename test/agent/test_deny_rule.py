"""The deny rule's regular expression (scripts/nginx/hostguard-deny.conf) denies the same paths as the plain
one it replaced (issue 43, item 14), which backtracked exponentially on a path of many slashes.

Python's `re` has the atomic groups and possessive quantifiers of nginx's PCRE since 3.11; PCRE's `\\z`
is Python's `\\Z`. Whether nginx answers a hostile path in time is bench/run.sh's nginx row; that
nginx denies the listed paths, with merge_slashes on and off, is test/payload/nginx.bats.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="re has no atomic groups before Python 3.11")

SNIPPET = Path(__file__).resolve().parents[2] / "scripts/nginx/hostguard-deny.conf"
# The rule as SPEC's endings say it, with nested repeats (exponential on //// without merge_slashes).
PLAIN = (
    r"(?:/\.git(?:;[^/]*)?/|(?:\.env|\.git|\.bak|\.old|\.dist|\.dev|\.local|\.aws(?:;[^/]*)?/+credentials)"
    r"(?:;[^/]*)?(?:/+(?:;[^/]*)?)*$)"
)
PIECES = ["/", "//", ";", ";x", ".env", ".ENV", ".git", ".aws", "credentials", "Credentials", "cred", ".local"]
PIECES += [".bak", ".config", ".", "a", "x", "\n", ".dev", ".old", ".dist", "%2e"]


def deny_rule() -> re.Pattern[str]:
    text = SNIPPET.read_text(encoding="utf-8")
    found = re.search(r'^if \(\$uri ~\* "(.*)"\) \{$', text, re.MULTILINE)
    assert found, f'{SNIPPET}: no `if ($uri ~* "...")` line'
    # nginx's quoted string turns \n into a newline; PCRE reads either as a newline.
    return re.compile(found.group(1).replace(r"\z", r"\Z"), re.IGNORECASE)


RULE = deny_rule() if sys.version_info >= (3, 11) else None


@settings(max_examples=4000, deadline=None)
@given(st.booleans(), st.lists(st.sampled_from(PIECES), max_size=10))
def test_the_rule_denies_exactly_what_the_plain_rule_denies(rooted: bool, pieces: list[str]) -> None:
    path = ("/" if rooted else "") + "".join(pieces)
    assert RULE is not None
    assert bool(RULE.search(path)) == bool(re.search(PLAIN, path, re.IGNORECASE)), repr(path)


@pytest.mark.parametrize(
    ("path", "denied"),
    [
        ("/.env" + "/" * 3000 + "x", False),
        ("/.env" + "/;" * 3000 + "/x", False),
        ("/.env" + "/;" * 3000 + "x", True),
        ("/a" + ".env;" * 2000 + "/x", False),
        ("/" + ".aws;" * 1500 + "/" * 1500 + "x", False),
        ("/.env" + "/" * 3000, True),
        ("/a/.aws;" + "x" * 3000 + "//credentials/;y", True),
        ("/a/.git;" * 1000 + "/", True),
    ],
    ids=range(8),
)
def test_long_hostile_paths_get_the_plain_rules_answer(path: str, denied: bool) -> None:
    assert RULE is not None
    assert bool(RULE.search(path)) == denied
