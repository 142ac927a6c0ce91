"""The Spring property of `install --part web`: spring.web.resources.add-mappings=false, and its exact undo.

The edit is one pass over the file's lines: an existing key line (any of
`key=v`, `key = v`, `key:v`, `key v`, a bare `key`; not in a comment or a
continuation) gets the value `false` with its own separator kept, else the
line is appended. The record says, for every line changed, its position (line
index) and both texts; uninstall puts the old text back at that position when
the line there is still what install wrote, and never by searching for the
text (two lines install made identical would come back swapped).
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from dataclasses import dataclass, field

from .errors import HostguardError

KEY = "spring.web.resources.add-mappings"
VALUE = "false"
_KEY_LINE = re.compile(r"([ \t\r\f\v]*" + re.escape(KEY) + r")([ \t\r\f\v]*[=:][ \t\r\f\v]*|[ \t\r\f\v]+|$)(.*)")
_COMMENT = re.compile(r"[ \t\r\f\v]*[#!]")
_TRAILING_BACKSLASHES = re.compile(r"\\*$")


@dataclass
class Edit:
    """What install changed: (index, old text) per line set; the appended line's index and the old final newline.

    The new text of a line set is not kept: it is a function of the old one (`_set`).
    """

    set: list[tuple[int, str]] = field(default_factory=list)
    added: int | None = None
    old_eol: bool = True

    def encode(self) -> str:
        """One manifest field: base64 of the compressed JSON (a file of similar lines compresses well)."""
        data = json.dumps({"set": self.set, "added": self.added, "eol": self.old_eol}, separators=(",", ":"))
        return base64.b64encode(zlib.compress(data.encode(), 6)).decode()

    @classmethod
    def decode(cls, text: str) -> Edit:
        data = json.loads(zlib.decompress(base64.b64decode(text)))
        return cls([(int(i), str(old)) for i, old in data["set"]], data["added"], bool(data["eol"]))


def refuse_yaml(path: str) -> None:
    """A key=value line would stop an application.yml from parsing: refused before anything is written."""
    if path.lower().endswith((".yml", ".yaml")):
        raise HostguardError(
            f"APP_PROPERTIES: {path} is a YAML file: refused (only the .properties format is edited; set spring: web:"
            " resources: add-mappings: false in it by hand, or name an application.properties)"
        )


def _split(data: bytes) -> tuple[list[str], bool]:
    """The file's lines (latin-1: every byte kept) and whether it ends with a newline (an empty file does)."""
    text = data.decode("latin-1")
    if not text:
        return [], True
    lines = text.split("\n")
    eol = lines[-1] == ""
    if eol:
        lines.pop()
    return lines, eol


def _join(lines: list[str], eol: bool) -> bytes:
    if not lines:
        return b""
    return ("\n".join(lines) + ("\n" if eol else "")).encode("latin-1")


def _continues(line: str) -> bool:
    """An odd number of trailing backslashes: the value goes on on the next line."""
    m = _TRAILING_BACKSLASHES.search(line)
    return m is not None and len(m.group(0)) % 2 == 1


def _set(m: re.Match[str]) -> str:
    """The key line with the value false, its own separator kept (`=` for a bare key)."""
    return m.group(1) + (m.group(2) or "=") + VALUE


def edit(data: bytes, real: str) -> tuple[bytes, Edit] | None:
    """DATA with the key set to false (one pass), and the record; None when nothing changes."""
    lines, eol = _split(data)
    record = Edit(old_eol=eol)
    found = continued = False
    for i, line in enumerate(lines):
        if continued:
            continued = _continues(line)
            continue
        if _COMMENT.match(line):
            continue
        continued = _continues(line)
        m = _KEY_LINE.fullmatch(line)
        if not m:
            continue
        found = True
        if m.group(3).strip(" \t\r\f\v") == VALUE:
            continue
        if continued:
            raise HostguardError(f"{real}: {KEY} has a multi-line value; edit it by hand")
        record.set.append((i, line))
        lines[i] = _set(m)
    if not found:
        record.added = len(lines)
        lines.append(f"{KEY}={VALUE}")
        eol = True
    if not record.set and record.added is None:
        return None
    return _join(lines, eol), record


def restore(data: bytes, record: Edit, real: str) -> tuple[bytes | None, list[str]]:
    """DATA with what install changed given back by position; warnings for lines changed since."""
    lines, eol = _split(data)
    warnings = []
    changed = False
    for i, old in record.set:
        m = _KEY_LINE.fullmatch(old)
        if m and i < len(lines) and lines[i] == _set(m):
            lines[i] = old
            changed = True
        elif i < len(lines) and lines[i] == old:
            continue  # given back already (an uninstall killed after its write)
        else:
            warnings.append(f"{real}: line {i + 1}, which install set, was changed since: left as it is")
    if record.added is not None:
        i = record.added
        if i < len(lines) and lines[i] == f"{KEY}={VALUE}":
            if i == len(lines) - 1:
                eol = record.old_eol
            del lines[i]
            changed = True
        else:
            warnings.append(f"{real}: the line install appended (line {i + 1}) is gone or changed: nothing removed")
    return (_join(lines, eol) if changed else None), warnings


def restore_legacy(data: bytes, kind: str, first: str, second: str, real: str) -> tuple[bytes | None, list[str]]:
    """The records of the bash installer (prop OLD NEW, propadd NEW EOL; base64), as it restored them."""
    lines, eol = _split(data)
    new = base64.b64decode(first if kind == "propadd" else second).decode("latin-1")
    at = [i for i, line in enumerate(lines) if line == new]
    if not at:
        return None, [f"{real}: the line install {'appended' if kind == 'propadd' else 'set'} was changed since"]
    if kind == "prop":
        lines[at[0]] = base64.b64decode(first).decode("latin-1")
    else:
        if at[-1] == len(lines) - 1:
            eol = second != "0"
        del lines[at[-1]]
    return _join(lines, eol), []
