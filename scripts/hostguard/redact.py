"""Redaction of the secret URLs (webhook, heartbeat) from every text that leaves the host.

A chat service or a proxy may echo the request in an error ("Cannot POST
/services/T000/B000/..."), so every log line, error, status line and dead
letter's reason passes `redact` first. It replaces every form of the URLs in
the two root-only files: the whole URL, host and path, the path (and query)
alone, its secret segments (the last one, and any of 16 characters or more),
each also percent-encoded (either case) and JSON-escaped.
"""

from __future__ import annotations

import re

from . import paths

REDACTED = "[secret URL redacted]"
# Pieces shorter than this are not secrets of their own (/, /services).
_MIN = 8
_URL = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]*://[^"\s]+""")
_ESCAPE = re.compile(r"%[0-9A-F]{2}")

_pieces: list[str] | None = None


def _forms(piece: str) -> list[str]:
    from urllib.parse import quote

    if len(piece) < _MIN:
        return []
    encoded = quote(piece, safe="")
    lower = _ESCAPE.sub(lambda m: m.group(0).lower(), encoded)
    return [piece, piece.replace("/", "\\/"), encoded, lower]


def pieces_of(url: str) -> list[str]:
    """Every form of URL that must not leave the host, longest first."""
    rest = url.split("://", 1)[1] if "://" in url else url
    path = "/" + rest.split("/", 1)[1] if "/" in rest else ("?" + rest.split("?", 1)[1] if "?" in rest else "")
    found = [url, rest, path, path.lstrip("/")]
    if "?" in path:
        found.append(path.split("?", 1)[1])
    segments = [s for s in path.split("?", 1)[0].split("/") if s]
    found += [s for s in segments if len(s) >= 16]
    if segments:
        found.append(segments[-1])
    forms = {form for piece in found for form in _forms(piece)}
    return sorted(forms, key=len, reverse=True)


def load(files: tuple[str, ...] | None = None) -> list[str]:
    """The pieces of the URLs in the webhook and heartbeat files (those this process can read)."""
    names = files if files is not None else (paths.under(paths.WEBHOOK_PATH), paths.under(paths.HEARTBEAT_PATH))
    found: set[str] = set()
    for name in names:
        try:
            with open(name, encoding="utf-8", errors="replace") as handle:
                text = handle.read(65536)
        except OSError:
            continue
        for match in _URL.finditer(text):
            found.update(pieces_of(match.group(0)))
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """TEXT with every form of the secret URLs replaced by REDACTED."""
    global _pieces
    if _pieces is None:
        _pieces = load()
    for piece in _pieces:
        if piece in text:
            text = text.replace(piece, REDACTED)
    return text


def forget() -> None:
    """Read the secret files again at the next redact (after set-webhook in the same process)."""
    global _pieces
    _pieces = None
