"""The users' files of `install --part web`: the files nginx loads from NGINX_SERVER_CONF, and APP_PROPERTIES.

A `Web` per installer step (install/webpart.py) reads and writes each file through safepath and userio
within one deadline and budget. `nginx` and `props` refuse what cannot be edited (HostguardError naming the
file) before any write; with `plan` they collect the changes and log lines (`notes`); `undo` plans the
changes that give a record's file back; `stale` picks the records whose edit the settings no longer make;
`write` replaces a file as its controller; `drop_temp` removes the temp file a killed `write` left beside it.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from typing import NamedTuple

from ..errors import HostguardError
from . import nginxconf, properties, safepath, userio

MAX_FILES = 1000
_GLOB = frozenset("*?[")


class Change(NamedTuple):
    """One user's file to replace: its record's KIND and EXTRA (include: token, lines added; props: record)."""

    kind: str
    label: str
    real: str
    old: bytes
    new: bytes
    extra: tuple[str, ...]


class Web:
    """One step's reads: the root, the budget, and (with PLAN) the changes and log lines found."""

    def __init__(self, root: str, deadline: float, plan: bool = True) -> None:
        self.root = root
        self.budget = userio.Budget(deadline)
        self.plan = plan
        self.prefix: str | None = None
        self.changes: list[Change] = []
        self.notes: list[tuple[str, str]] = []
        # Every file the nginx walk read (where an include record may stay) and APP_PROPERTIES as resolved.
        self.visited: set[str] = set()
        self.props_real: str | None = None

    def read(self, target: safepath.Target) -> bytes:
        try:
            return userio.read(target, self.budget)
        finally:
            target.close()

    def change(self, kind: str, label: str, real: str, old: bytes, new: bytes, *extra: str) -> None:
        if len(new) > safepath.READ_MAX:
            # Uninstall could not read it back.
            raise HostguardError(
                f"{label}: {real}: the edited file would be {len(new)} bytes, over the limit of {safepath.READ_MAX}"
                " bytes root reads from such a file: refused"
            )
        self.changes.append(Change(kind, label, real, old, new, extra))

    def conf_prefix(self) -> str:
        """nginx's conf prefix, the directory of `nginx -V`'s --conf-path (Debian: /etc/nginx)."""
        if self.prefix is None:
            conf = ""
            try:
                run = subprocess.run(["nginx", "-V"], capture_output=True, text=True, timeout=10, check=False)
                for word in run.stderr.split():
                    if word.startswith("--conf-path="):
                        conf = word.split("=", 1)[1]
                        break
            except (OSError, subprocess.SubprocessError):
                pass
            if not conf.startswith("/") or conf.count("/") < 2:
                conf = "/etc/nginx/nginx.conf"
            self.prefix = conf.rsplit("/", 1)[0]
        return self.prefix

    def include_targets(self, label: str, pattern: str) -> list[str]:
        """The host paths `include PATTERN` loads, as nginx resolves it; a wildcard only in a root's directory."""
        if not pattern.startswith("/"):
            pattern = f"{self.conf_prefix()}/{pattern}"
        if not _GLOB.intersection(pattern):
            return [pattern]
        folder, base = pattern.rsplit("/", 1)
        if _GLOB.intersection(folder):
            raise HostguardError(
                f"{label}: {pattern}: a wildcard in a directory name is not followed: refused (name the directories)"
            )
        try:
            safepath.root_dir(folder or "/", self.root)
        except HostguardError as exc:
            raise HostguardError(
                f"{label}: {pattern}: the files a wildcard picks must be in a directory only root can write to: {exc}"
            ) from None
        try:
            names = os.listdir(self.root + folder if folder else self.root or "/")
        except OSError:
            return []
        dots = base.startswith(".")
        return [f"{folder}/{n}" for n in sorted(names) if fnmatch.fnmatchcase(n, base) and (dots or n[0] != ".")]

    def nginx(self, conf: str) -> None:
        """Walks CONF and every file it includes where a server may stand; plans the include for each."""
        todo = [(conf, "auto", "NGINX_SERVER_CONF")]
        seen: set[str] = set()
        servers = added = 0
        k = 0
        while k < len(todo):
            path, ctx, label = todo[k]
            k += 1
            target = safepath.resolve(label, path, self.root)
            if target.real in seen:
                target.close()
                continue
            seen.add(target.real)
            data = self.read(target)
            if len(seen) > MAX_FILES:
                raise HostguardError(f"NGINX_SERVER_CONF: {conf}: includes more than {MAX_FILES} files: refused")
            tok = nginxconf.token(target.real, data)
            try:
                new, count, scan = nginxconf.add_include(data, tok, ctx)
            except nginxconf.ConfError as exc:
                raise HostguardError(f"{label}: {target.real}: {exc}: the deny include cannot be placed") from None
            servers += len(scan.servers)
            for line, text in sorted(scan.warnings):
                self.notes.append(("WARN", f"{target.real} line {line}: {text}"))
            if count and self.plan:
                self.change("include", label, target.real, data, new, tok, str(count))
                added += count
            for line, ictx, ipath in scan.includes:
                ilabel = f"NGINX_SERVER_CONF: {target.real} line {line}: include {ipath}"
                todo.extend((t, ictx, ilabel) for t in self.include_targets(ilabel, ipath))
        if not servers:
            raise HostguardError(
                f"NGINX_SERVER_CONF: {conf}: no server block of the http context (in it or the files it includes):"
                " the deny include cannot be placed"
            )
        if self.plan and not added:
            self.notes.append(("INFO", f"every server block nginx loads from {conf} has the deny include"))
        self.visited |= seen

    def props(self, path: str) -> None:
        """Plans the final document of APP_PROPERTIES; warns of a sibling file that sets the key again."""
        target = safepath.resolve("APP_PROPERTIES", path, self.root)
        if not self.plan:
            # Counted in the install's bound before any write; read when the part is installed.
            self.budget.take(target, target.size)
            target.close()
            return
        try:
            names = properties.siblings(target.name, os.listdir(target.dir_fd))
        except OSError:
            names = []
        real, data = target.real, self.read(target)
        self.props_real = real
        added = properties.edit(data, real)
        if added is not None:
            new = data + added.encode("latin-1")
            self.change("props", "APP_PROPERTIES", real, data, new, properties.encode(added))
        for name in names:
            sibling = f"{real.rsplit('/', 1)[0]}/{name}"
            try:
                sets = properties.sets_key(self.read(safepath.resolve("APP_PROPERTIES", sibling, self.root)))
            except HostguardError as exc:
                self.notes.append(("WARN", f"{sibling} outranks {real} and could not be checked: {exc}"))
                continue
            if sets:
                self.notes.append(("WARN", f"{sibling} sets {properties.KEY} too and outranks {real}: set it to"
                                           " false there, or remove it"))  # fmt: skip

    def undo(self, kind: str, real: str, args: list[str]) -> None:
        label = "APP_PROPERTIES" if kind == "props" else "NGINX_SERVER_CONF"
        if not os.path.lexists(self.root + real):
            what = "no deny include to remove" if kind == "include" else f"{properties.KEY} not restored"
            self.notes.append(("WARN", f"{real} is gone: {what}"))
            return
        target = safepath.resolve(label, real, self.root)
        # A file with two records (two installs' include tokens): the second undo works on the first's result.
        planned = [c.new for c in self.changes if c.real == target.real]
        if planned:
            target.close()
        data = planned[-1] if planned else self.read(target)
        warnings: list[str] = []
        if kind == "include":
            new: bytes | None
            new, removed = nginxconf.remove_include(data, args[0] if args else "")
            new = new if removed else None
        else:
            new, warnings = properties.restore(data, properties.decode(args[0]), target.real)
        self.notes.extend(("WARN", w) for w in warnings)
        if new is not None:
            self.change(kind, label, target.real, data, new)

    def write(self, label: str, real: str, data: bytes) -> None:
        """Replaces REAL (as resolved now, which must still be REAL) with DATA, as its controller."""
        target = safepath.resolve(label, real, self.root)
        try:
            if target.real != real:
                raise HostguardError(f"{real} moved while install read it: refused")
            userio.replace(target, data, self.budget)
        finally:
            target.close()

    def drop_temp(self, label: str, real: str) -> None:
        """Removes the temp file a write of REAL (as resolved now, which must still be REAL) cut short left."""
        target = safepath.resolve(label, real, self.root)
        try:
            if target.real != real:
                raise HostguardError(f"{real} moved since a killed run wrote it: refused")
            userio.drop_temp(target, self.budget)
        finally:
            target.close()


def stale(records: list[tuple[str, str]], web: Web) -> list[int]:
    """The indexes of RECORDS (kind, path: a part's include and props records) whose edit WEB's settings no
    longer make: an include in a file the nginx walk did not read, a document in another file than
    APP_PROPERTIES (or none)."""
    keep = {"include": web.visited, "props": {web.props_real} if web.props_real else set()}
    return [n for n, (kind, path) in enumerate(records) if path not in keep.get(kind, {path})]
