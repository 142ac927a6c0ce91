"""Redaction of the secret URLs (webhook, heartbeat) from every text that leaves the host.

A chat service or a proxy may echo the request in an error ("Cannot POST
/services/T000/B000/..."), so every log line, error, status line and dead
letter's reason passes `redact` first. It replaces every form of the URLs in
the root-only files (and set-webhook's candidate): the whole URL, host and path, the path (and query)
alone, its secret segments (the last one, and any of 16 characters or more),
each query value alone (Teams' `sig`, a `token`), each also percent-decoded,
percent-encoded (either case) and JSON-escaped; and PagerDuty's routing key
(the webhook file's routing_key=). A fixed word of a service's URLs
(Google Chat's `messages`, PagerDuty's `v2/enqueue`, an `api-version` date)
is no secret: it is never replaced on its own.
"""

import re
from urllib.parse import quote, unquote, unquote_plus

from . import paths, urltext

REDACTED = "[secret URL redacted]"
# Pieces shorter than this are not secrets of their own (/, /services).
_MIN = 8
# A word every webhook of a service has: words of at most 15 lower-case letters (joined by - _ /), or a
# version or date (groups of at most 4 digits). A longer run of letters or digits may be a secret.
_FIXED = re.compile(r"/*(?:[a-z]{1,15}(?:[-_/][a-z]{1,15})*|v?[0-9]{1,4}(?:[-._][0-9]{1,4})*)/*")

# Every form of the pieces: plain, JSON-escaped, percent-encoded; longest first.
_pieces: "list[str] | None" = None


def secret(piece: str) -> bool:
    """Whether PIECE may stand for a secret on its own: long enough, and no fixed word (_FIXED) even decoded."""
    return len(piece) >= _MIN and not _FIXED.fullmatch(unquote_plus(piece))


def raw_pieces(url: str) -> list[str]:
    """The parts of URL that are secret on their own: the URL, host and path, path (and query), segments,
    query values; each also percent-decoded. None when all of URL is fixed words (PagerDuty's)."""
    rest = url.split("://", 1)[1] if "://" in url else url
    path = "/" + rest.split("/", 1)[1] if "/" in rest else ("?" + rest.split("?", 1)[1] if "?" in rest else "")
    query = path.split("?", 1)[1] if "?" in path else ""
    segments = [s for s in path.split("?", 1)[0].split("/") if s]
    values = [pair.split("=", 1)[1] for pair in query.split("&") if "=" in pair]
    own = [s for s in segments if len(s) >= 16] + segments[-1:] + values
    if not any(secret(piece) for piece in own):
        return []
    found = [url, rest, path, path.lstrip("/"), query, *own]
    found += [decoded(piece) for piece in found for decoded in (unquote, unquote_plus)]
    return [piece for piece in found if secret(piece)]


def _longest_first(pieces: set[str]) -> list[str]:
    return sorted(pieces, key=len, reverse=True)


def plain_forms(pieces: list[str]) -> list[str]:
    return _longest_first({form for piece in pieces for form in (piece, piece.replace("/", "\\/"))})


def encoded_forms(pieces: list[str]) -> list[str]:
    """Each piece percent-encoded as a URL's reserved characters are, upper- and lower-case hex."""
    forms: set[str] = set()
    for piece in pieces:
        encoded = quote(piece, safe="")
        if encoded != piece:
            parts = encoded.split("%")
            lower = parts[0] + "".join("%" + part[:2].lower() + part[2:] for part in parts[1:])
            forms.update((encoded, lower))
    return _longest_first(forms)


def load(files: "tuple[str, ...] | None" = None) -> list[str]:
    """Every form of the URLs in the webhook and heartbeat files (those this process can read)."""
    # set-webhook --verify's candidate too: a service refusing it may echo its URL into the deploy's output.
    own = (paths.WEBHOOK_PATH, paths.WEBHOOK_CANDIDATE_PATH, paths.HEARTBEAT_PATH)
    names = files if files is not None else tuple(paths.under(name) for name in own)
    raw: list[str] = []
    for name in names:
        try:
            with open(name, encoding="utf-8", errors="replace") as handle:
                text = handle.read(urltext.MAX_BYTES)
        except OSError:
            continue
        # Every url= and routing_key= value, even of a file the notifier would refuse.
        for _, key, value in urltext.lines(text):
            if key == "url":
                raw += raw_pieces(value)
            elif key == "routing_key" and secret(value):
                raw.append(value)
    return _longest_first(set(plain_forms(raw)) | set(encoded_forms(raw)))


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
