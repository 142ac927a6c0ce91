"""The Spring setting of `install --part web`: one final document that says spring.web.resources.add-mappings=false.

The user's lines are never touched: one unconditional document is appended (`.properties`: a `#---` line
then `KEY=false`; `.yml`/`.yaml`: `---` then `KEY: false`, after a line end of the file's own kind where
needed) and exactly the bytes appended are recorded; uninstall removes them while they are still the file's
end. `siblings` and `sets_key` find the files of the same configuration name that outrank it and set the key
again (for a warning).
"""

from __future__ import annotations

import json
import re

KEY = "spring.web.resources.add-mappings"
_YAML = (".yml", ".yaml")
_EXTENSIONS = (".properties", *_YAML)
# The key in any spelling Spring binds to it: add-mappings, add\-mappings, addMappings, add_mappings.
_SETS_KEY = re.compile(rb"add(\\?[-_])?mappings", re.IGNORECASE)
_TRAILING_BACKSLASHES = re.compile(r"\\*$")


def is_yaml(path: str) -> bool:
    return path.lower().endswith(_YAML)


def document(path: str, eol: str = "\n") -> str:
    """The final document install appends to the file at PATH (without what may precede it)."""
    if is_yaml(path):
        return f"---{eol}{KEY}: false{eol}"
    return f"#---{eol}{KEY}=false{eol}"


def _needs_break(last: str) -> bool:
    """After LAST (the file's last line), `#---` would be part of a comment pair or of a continued value."""
    stripped = last.lstrip(" \t\f")
    if stripped.startswith(("#", "!")):
        return True
    m = _TRAILING_BACKSLASHES.search(last)
    return m is not None and len(m.group(0)) % 2 == 1


def edit(data: bytes, path: str) -> str | None:
    """The text install appends to DATA (the file at PATH); None when the file already ends with the document."""
    text = data.decode("latin-1")
    eol = "\r\n" if "\r\n" in text else "\n"
    if text.endswith((document(path), document(path, "\r\n"))):
        return None
    prefix = ""
    if text and not text.endswith("\n"):
        prefix = eol
    if not is_yaml(path) and text:
        lines = text.split("\n")
        if _needs_break((lines[-2] if text.endswith("\n") else lines[-1]).rstrip("\r")):
            prefix += eol
    return prefix + document(path, eol)


def restore(data: bytes, added: str, real: str) -> tuple[bytes | None, list[str]]:
    """DATA without ADDED (what install appended) while it is still the file's end; else a warning."""
    raw = added.encode("latin-1")
    if data.endswith(raw):
        return data[: len(data) - len(raw)], []
    return None, [
        f"{real}: the document install appended ({KEY}=false after a document separator) is no longer the end of"
        " the file: left as it is (remove it by hand)"
    ]


def encode(added: str) -> str:
    """ADDED as one manifest field (one line)."""
    return json.dumps(added)


def decode(field: str) -> str:
    value = json.loads(field)
    if not isinstance(value, str):
        raise ValueError(f"not a string: {field}")
    return value


def siblings(name: str, names: list[str]) -> list[str]:
    """The files among NAMES (one directory) that Spring reads with the file NAME and ranks above it."""
    stem, dot, ext = name.rpartition(".")
    if not dot:
        return []
    out = []
    for other in sorted(names):
        ostem, odot, oext = other.rpartition(".")
        if not odot or other == name or f".{oext.lower()}" not in _EXTENSIONS:
            continue
        profile = ostem.startswith(stem + "-") and len(ostem) > len(stem) + 1
        # In one location .properties outranks .yml and .yaml.
        same = ostem == stem and oext.lower() == "properties" and ext.lower() != "properties"
        if profile or same:
            out.append(other)
    return out


def sets_key(data: bytes) -> bool:
    return _SETS_KEY.search(data) is not None
