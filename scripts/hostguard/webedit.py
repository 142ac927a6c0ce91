"""The users' files of `install --part web`: the files nginx loads from NGINX_SERVER_CONF, and APP_PROPERTIES.

Commands (the installer's transaction calls them; every read and write of a
user's file goes through safepath and userio, within one budget per install:
`--deadline` is the install's end, in seconds since the epoch):

  check --root R --deadline D [--nginx CONF] [--properties PATH]
      refuses (exit 1, one `hostguard: ...` line) what cannot be edited, before any write
  plan  ... --work DIR
      the same, then prints one line per file to change (copy and new content written in DIR):
      `E<TAB>include<TAB>label<TAB>real<TAB>copy<TAB>content<TAB>token<TAB>added`
      `E<TAB>props<TAB>label<TAB>real<TAB>copy<TAB>content<TAB>record`
      and `W<TAB>text` / `I<TAB>text` for the log
  undo  --root R --deadline D --work DIR    (stdin: KIND<TAB>REAL<TAB>FIRST<TAB>SECOND a record:
      include TOKEN; props RECORD; prop and propadd of the bash installer)
      prints the same E line for each change that gives a file back, or W lines
  write --root R --deadline D    (stdin: LABEL<TAB>REAL<TAB>CONTENT a file)
      replaces each REAL (as resolved now, which must still be REAL) with CONTENT, as its controller
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tempfile

from . import nginxconf, properties, safepath, userio
from .errors import HostguardError
from .log import die_line

MAX_FILES = 1000
_GLOB = frozenset("*?[")


class Web:
    """One command's reads: the root, the budget, and where copies go."""

    def __init__(self, root: str, deadline: float, work: str | None) -> None:
        self.root = root
        self.budget = userio.Budget(deadline)
        self.work = work
        self.prefix: str | None = None
        self.out: list[str] = []

    def read(self, target: safepath.Target) -> bytes:
        try:
            return userio.read(target, self.budget)
        finally:
            target.close()

    def keep(self, data: bytes) -> str:
        """A root-only file in the work directory holding DATA."""
        assert self.work is not None
        fd, path = tempfile.mkstemp(prefix="web.", dir=self.work)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path

    def change(self, kind: str, label: str, real: str, old: bytes, new: bytes, *extra: str) -> None:
        if any(c in real or c in label for c in "\t\n"):
            # The plan is one line per file, TAB-separated.
            raise HostguardError(f"{label!r}: {real!r}: a path with a tab or a newline: refused")
        if len(new) > safepath.READ_MAX:
            # Uninstall could not read it back.
            raise HostguardError(
                f"{label}: {real}: the edited file would be {len(new)} bytes, over the limit of {safepath.READ_MAX}"
                " bytes root reads from such a file: refused"
            )
        self.out.append("\t".join(["E", kind, label, real, self.keep(old), self.keep(new), *extra]))

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
                self.out.append(f"W\t{target.real} line {line}: {text}")
            if count and self.work is not None:
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
        if self.work is not None and not added:
            self.out.append(f"I\tevery server block nginx loads from {conf} has the deny include")

    def props(self, path: str) -> None:
        properties.refuse_yaml(path)
        target = safepath.resolve("APP_PROPERTIES", path, self.root)
        properties.refuse_yaml(target.real)
        if self.work is None:
            # Counted in the install's bound before any write; read when the part is installed.
            self.budget.take(target, target.size)
            target.close()
            return
        data = self.read(target)
        result = properties.edit(data, target.real)
        if result is not None:
            self.change("props", "APP_PROPERTIES", target.real, data, result[0], result[1].encode())

    def undo(self, kind: str, real: str, args: list[str]) -> None:
        label = "APP_PROPERTIES" if kind.startswith("prop") else "NGINX_SERVER_CONF"
        if not os.path.lexists(self.root + real):
            what = "no deny include to remove" if kind == "include" else f"{properties.KEY} not restored"
            self.out.append(f"W\t{real} is gone: {what}")
            return
        target = safepath.resolve(label, real, self.root)
        data = self.read(target)
        warnings: list[str] = []
        if kind == "include":
            new: bytes | None
            new, removed = nginxconf.remove_include(data, args[0] if args else "")
            new = new if removed else None
        elif kind == "props":
            new, warnings = properties.restore(data, properties.Edit.decode(args[0]), target.real)
        else:
            new, warnings = properties.restore_legacy(data, kind, args[0], args[1], target.real)
        self.out.extend(f"W\t{w}" for w in warnings)
        if new is not None:
            self.change(kind, label, target.real, data, new)

    def write(self, label: str, real: str, content: str) -> None:
        target = safepath.resolve(label, real, self.root)
        try:
            if target.real != real:
                raise HostguardError(f"{real} moved while install read it: refused")
            with open(content, "rb") as f:
                userio.replace(target, f.read(), self.budget)
        finally:
            target.close()


def _options(argv: list[str]) -> tuple[str, dict[str, str], list[str]]:
    """COMMAND --name value ... [--] ARGS: the installer's own calls, never a user's command line."""
    if not argv or argv[0] not in ("check", "plan", "undo", "write"):
        raise HostguardError("webedit: usage: check|plan|undo|write --root R --deadline D [--work W] ... [--] ARGS")
    opts: dict[str, str] = {}
    rest = argv[1:]
    while rest and rest[0].startswith("--") and rest[0] != "--":
        if len(rest) < 2:
            raise HostguardError(f"webedit: {rest[0]} needs a value")
        opts[rest[0][2:]] = rest[1]
        rest = rest[2:]
    return argv[0], opts, rest[1:] if rest[:1] == ["--"] else rest


def main(argv: list[str]) -> int:
    try:
        command, opts, args = _options(argv)
        web = Web(opts.get("root", ""), float(opts["deadline"]), opts.get("work") if command != "check" else None)
        if command in ("check", "plan"):
            if opts.get("nginx"):
                web.nginx(opts["nginx"])
            if opts.get("properties"):
                web.props(opts["properties"])
        elif command == "undo":
            # One record a line on stdin: KIND REAL FIRST SECOND (a props record may be long).
            for line in sys.stdin.read().splitlines():
                kind, real, *rest = line.split("\t")
                web.undo(kind, real, rest)
        else:
            # One file a line on stdin: LABEL REAL CONTENT.
            for line in sys.stdin.read().splitlines():
                label, real, content = line.split("\t")
                web.write(label, real, content)
    except HostguardError as exc:
        sys.stderr.write(die_line(str(exc)) + "\n")
        return exc.code
    sys.stdout.write("".join(line + "\n" for line in web.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
