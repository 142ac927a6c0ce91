"""The deny include in nginx's own config files: found by nginx's lexer, added and removed byte for byte.

`scan` reads a config text as `ngx_conf_read_token` (src/core/ngx_conf_file.c) does, in one linear pass,
and returns the `server` blocks of the http context, every `location` inside one, the includes nginx
follows where a server may stand, and warnings for what the deny rule cannot see (README: "What the deny
rule covers"). A server that can route a URI to no location (a rewrite) and has no catch-all `location /`
gets one holding only the include, or, when it includes other files, a warning naming the file and line.
Text is latin-1: offsets are byte offsets and every byte goes through untouched.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

SNIPPET = "/etc/nginx/snippets/hostguard-deny.conf"
INCLUDE_LINE = f"include {SNIPPET}; # hostguard"
NULL_LOCATION_LINE = f"location / {{ include {SNIPPET}; }} # hostguard"
SPLIT_SUFFIX = " (line split)"
LOCATION_SUFFIX = " (location)"
NULL_SUFFIX = " (null location)"

_BLANKS = re.compile(r"[ \t\r\n]+")
_COMMENT = re.compile(r"[^\n]*")
# The rest of a word, as ngx_conf_read_token reads it: an escaped character,
# `$` with the `{`s it keeps, anything else but a blank, `;`, `{`, `\` or `$`.
_WORD = re.compile(r"(?:\\[\s\S]|\$\{*|[^ \t\r\n;{\\$])*")
_DQ = re.compile(r'(?:\\[\s\S]|[^"\\])*')
_SQ = re.compile(r"(?:\\[\s\S]|[^'\\])*")
_UNESCAPE = re.compile(r"\\([\"'\\tnr])")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
_TRY_SAFE = re.compile(r"\$uri(/|\.[A-Za-z0-9]+)?")
_DENIED_END = re.compile(r"\.(env|git|bak|old|dist|dev|local)$", re.IGNORECASE)
_MAIN_ONLY = frozenset(("http", "events", "stream", "mail"))
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


_UNSEEN = (
    "serves another URI than the one the deny rule checked; the rule does not cover what it serves"
    " (docs/host.md: what the deny rule covers)"
)


class ConfError(Exception):
    """Text nginx would refuse: `line N: what`, as nginx says it."""


@dataclass
class Block:
    """A `server` of the http context (kind S) or a `location` inside one (kind L)."""

    kind: str
    line: int
    insert: int
    split: bool
    indent: str
    has: bool = False


@dataclass
class Server:
    """What the null-location check needs to know about one server block."""

    block: Block
    catch_all: bool = False
    foreign_include: bool = False
    routes: list[int] = field(default_factory=list)


@dataclass
class Scan:
    """The blocks, includes and warnings of one file read as context `ctx`."""

    ctx: str
    blocks: list[Block] = field(default_factory=list)
    servers: list[Server] = field(default_factory=list)
    includes: list[tuple[int, str, str]] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)

    def null_locations(self) -> list[Server]:
        """Servers that can route a URI to no location and can take a `location /`."""
        return [s for s in self.servers if s.routes and not s.catch_all and not s.foreign_include]


def _unescape(word: str) -> str:
    if "\\" not in word:
        return word
    return _UNESCAPE.sub(lambda m: _ESCAPES[m.group(1)], word)


@dataclass
class _Frame:
    name: str
    args: list[str]
    path: str
    block: Block | None
    server: Server | None
    in_location: bool


class _Parser:
    """Statements of one text, fed to the block structure as they end."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.counted = 0

    def _line_at(self, pos: int) -> int:
        # Lines counted once, forward only: linear in the text.
        self.line += self.text.count("\n", self.counted, pos)
        self.counted = pos
        return self.line

    def fail(self, pos: int, what: str) -> ConfError:
        return ConfError(f"line {self._line_at(pos)}: {what}")

    def statement(self) -> tuple[list[str], int, int, str, int]:
        """The next statement: its words, first line, start offset, end (`;` `{` `}` or ``), end offset."""
        text, n = self.text, len(self.text)
        words: list[str] = []
        start = line = -1
        pos = self.pos
        while True:
            m = _BLANKS.match(text, pos)
            if m:
                pos = m.end()
            if pos >= n:
                if words:
                    raise self.fail(n, 'unexpected end of file, expecting ";" or "}"')
                self.pos = pos
                return words, line, start, "", pos
            ch = text[pos]
            if ch == "#":
                pos = _COMMENT.match(text, pos).end()  # type: ignore[union-attr]
                continue
            if not words:
                start, line = pos, self._line_at(pos)
            if ch in ";{":
                if not words:
                    raise self.fail(pos, f'unexpected "{ch}"')
                self.pos = pos + 1
                return words, line, start, ch, pos
            if ch == "}":
                if words:
                    raise self.fail(pos, 'unexpected "}"')
                self.pos = pos + 1
                return words, line, start, ch, pos
            if ch in "\"'":
                m = (_DQ if ch == '"' else _SQ).match(text, pos + 1)
                end = m.end()  # type: ignore[union-attr]
                if end >= n:
                    raise self.fail(n, 'unexpected end of file, expecting ";" or "}"')
                words.append(_unescape(text[pos + 1 : end]))
                pos = end + 1
                # After a closing quote: a blank, `;`, `{` or `)` (an if's condition).
                if pos < n and text[pos] not in " \t\r\n;{)":
                    raise self.fail(pos, f'unexpected "{text[pos]}"')
                continue
            end = _WORD.match(text, pos).end()  # type: ignore[union-attr]
            if end >= n or end == pos:
                raise self.fail(n, 'unexpected end of file, expecting ";" or "}"')
            words.append(_unescape(text[pos:end]))
            pos = end


def _indent_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = start
    while end < pos and text[end] in " \t":
        end += 1
    return text[start:end]


def _insert_point(text: str, brace: int) -> tuple[int, bool]:
    """Where a block's include goes: end of its `{` line, or after the `{` (split) when more follows."""
    pos, n = brace + 1, len(text)
    while pos < n and text[pos] in " \t\r":
        pos += 1
    if pos >= n or text[pos] in "\n#":
        eol = text.find("\n", brace)
        return (n if eol < 0 else eol), False
    return pos, True


def _try_files_unsafe(args: list[str]) -> bool:
    """A try_files file argument that serves another file than the URI the rule checked."""
    return any(not _TRY_SAFE.fullmatch(arg) or _DENIED_END.search(arg) for arg in args[1:-1])


_Rewrite = tuple[str, int, str, "Server | None", bool, str]


class _Found:
    """What one pass over a text finds, each under its context path (`http server location`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.stack: list[_Frame] = [_Frame("", [], "", None, None, False)]
        self.blocks: list[tuple[str, Block]] = []
        self.servers: list[tuple[str, Server]] = []
        self.includes: list[tuple[int, str, str]] = []
        self.rewrites: list[_Rewrite] = []
        self.main = False

    def directive(self, words: list[str], line: int) -> None:
        """A simple directive (ended by `;`): an include, or a rewrite the deny rule cannot see past."""
        top, name = self.stack[-1], words[0]
        if name == "include" and len(words) == 2:
            if top.block is not None and words[1] == SNIPPET:
                top.block.has = True
            elif top.server is not None and not top.in_location and words[1] != SNIPPET:
                top.server.foreign_include = True
            self.includes.append((line, top.path, words[1]))
        elif name == "rewrite" or (name == "try_files" and _try_files_unsafe(words)):
            flag = words[3] if len(words) >= 4 and name == "rewrite" else ""
            self.rewrites.append((top.path, line, name, top.server, top.in_location, flag))

    def open(self, words: list[str], line: int, start: int, at: int) -> None:
        """A block (ended by `{`): a server or a location in one is noted with where its include goes."""
        top, name = self.stack[-1], words[0]
        if len(self.stack) == 1 and name in _MAIN_ONLY:
            self.main = True
        path = f"{top.path} {name}" if top.path else name
        frame = _Frame(name, words, path, None, top.server, top.in_location)
        if (name == "server" and len(words) == 1) or (name == "location" and top.server is not None):
            insert, split = _insert_point(self.text, at)
            block = Block("S" if name == "server" else "L", line, insert, split, _indent_of(self.text, start))
            frame.block = block
            self.blocks.append((top.path, block))
            if name == "server":
                frame.server = Server(block)
                self.servers.append((top.path, frame.server))
            else:
                frame.in_location = True
                if top.name == "server" and top.server is not None and words[1:] in (["/"], ["^~", "/"]):
                    top.server.catch_all = True
        self.stack.append(frame)


def _read(text: str) -> _Found:
    """TEXT's statements in one pass; ConfError where nginx refuses its structure."""
    parser = _Parser(text)
    found = _Found(text)
    while True:
        words, line, start, end, at = parser.statement()
        if end == "":
            if len(found.stack) > 1:
                raise parser.fail(len(text), 'unexpected end of file, expecting "}"')
            return found
        if end == "}":
            if len(found.stack) == 1:
                raise parser.fail(at, 'unexpected "}"')
            found.stack.pop()
        elif end == ";":
            found.directive(words, line)
        else:
            found.open(words, line, start, at)


def scan(text: str, ctx: str = "auto") -> Scan:
    """The blocks of TEXT read as a file of context CTX (auto, http, main); ConfError if nginx refuses it."""
    found = _read(text)
    if ctx == "auto":
        ctx = "main" if found.main else "http"
    want = "http" if ctx == "main" else ""
    srvpath = "http server" if ctx == "main" else "server"

    def in_server(path: str) -> bool:
        return path == srvpath or path.startswith(srvpath + " ")

    result = Scan(ctx)
    for parent, block in found.blocks:
        if (block.kind == "S" and parent == want) or (block.kind == "L" and in_server(parent)):
            result.blocks.append(block)
    result.servers = [s for parent, s in found.servers if parent == want]
    for line, parent, arg in found.includes:
        if parent == "" or (parent == "http" and ctx == "main"):
            if _CONTROL.search(arg):
                raise ConfError(f"line {line}: an include path with a control character")
            result.includes.append((line, ctx if parent == "" else "http", arg))
    _rewrite_warnings(result, found.rewrites, in_server)
    return result


def _rewrite_warnings(
    result: Scan,
    rewrites: list[_Rewrite],
    in_server: Callable[[str], bool],
) -> None:
    """Warnings for what no check sees; the routes that need the null location."""
    for path, line, name, server, in_location, flag in rewrites:
        if not in_server(path) or server is None:
            continue
        if name == "try_files":
            result.warnings.append((line, "this try_files serves another URI than the one the deny rule checked"))
            continue
        if flag == "break" and in_location:
            result.warnings.append(
                (line, "this rewrite ... break serves another URI than the one the deny rule checked")
            )
        elif flag not in ("redirect", "permanent"):
            server.routes.append(line)
    for server in result.servers:
        if server.routes and not server.catch_all and server.foreign_include:
            result.warnings.append(
                (
                    server.routes[0],
                    "this rewrite can send a URI to no location of its server (nginx then serves it from the"
                    " server's null location, which the deny rule's location checks never see) and the server"
                    " includes other files, so no catch-all `location /` was added: add one holding the deny"
                    f" include (include {SNIPPET};)",
                )
            )


def token(real: str, data: bytes) -> str:
    """16 hex digits of sha256(path NUL content): the same file gives the same token, an admin's line cannot."""
    return hashlib.sha256(real.encode("utf-8", "surrogateescape") + b"\0" + data).hexdigest()[:16]


def add_include(data: bytes, tok: str, ctx: str = "auto") -> tuple[bytes, int, Scan]:
    """DATA with the include (and any null location) added; how many lines were added; the scan."""
    text = data.decode("latin-1")
    result = scan(text, ctx)
    edits: list[tuple[int, str]] = []
    nulls = {id(s.block) for s in result.null_locations()}
    for block in result.blocks:
        lines = []
        if not block.has:
            lines.append(f"{block.indent}    {INCLUDE_LINE} {tok}" + ("" if block.kind == "S" else LOCATION_SUFFIX))
        if id(block) in nulls:
            lines.append(f"{block.indent}    {NULL_LOCATION_LINE} {tok}{NULL_SUFFIX}")
        if not lines:
            continue
        added = "\n" + "\n".join(lines)
        edits.append((block.insert, added + (SPLIT_SUFFIX + "\n" if block.split else "")))
    out: list[str] = []
    last = 0
    for at, added in edits:
        out.append(text[last:at])
        out.append(added)
        last = at
    out.append(text[last:])
    count = sum(a.count("\n") - (1 if a.endswith(SPLIT_SUFFIX + "\n") else 0) for _, a in edits)
    return "".join(out).encode("latin-1"), count, result


def remove_include(data: bytes, tok: str) -> tuple[bytes, int]:
    """DATA without the lines marked with TOK (empty: those of versions that wrote no token); how many."""
    text = data.decode("latin-1")
    marks = []
    for head in (INCLUDE_LINE, NULL_LOCATION_LINE):
        mark = f"{head} {tok}" if tok else head
        for suffix in ("", LOCATION_SUFFIX, NULL_SUFFIX):
            marks.append(mark + suffix)
    plain = set(marks)
    split = {m + SPLIT_SUFFIX for m in marks}
    n = len(text)
    cuts: list[tuple[int, int]] = []
    pos = text.find("\n") + 1
    # The first line has no newline before it: never a line install added.
    while 0 < pos <= n:
        eol = text.find("\n", pos)
        end = n if eol < 0 else eol
        line = text[pos:end].lstrip(" \t")
        if line in plain:
            cuts.append((pos - 1, end))
        elif line in split:
            cuts.append((pos - 1, min(end + 1, n)))
        pos = eol + 1 if eol >= 0 else 0
    out: list[str] = []
    last = 0
    for start, stop in cuts:
        out.append(text[last:start])
        last = stop
    out.append(text[last:])
    return "".join(out).encode("latin-1"), len(cuts)
