"""The installer: puts the payload beside it in place under a root prefix (default /), and takes it out again.

`install install|uninstall|list|set-webhook|set-heartbeat` (USAGE); the shim `install` beside hostguard/
checks the interpreter, then runs main(). Each change is recorded first in the transaction store
(txnstore.py), so uninstall removes exactly what install added and restores what it changed, even after a
crash; a failed part is rolled back from its journal (exit non-zero). Services (nginx, fail2ban) are tested
and reloaded only when the root is / and the part changed them.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import NamedTuple

from .. import log, paths
from ..errors import EX_USAGE, HostguardError
from ..settings_table import PARTS
from . import parts, services, txn, urlfiles
from .bundle import Bundle
from .txn import Txn

USAGE = """usage: install install [--part base|monitors|bantool|web] [--root DIR] [--settings FILE]
                         (from a rendered bundle: its files.table and hostguard.conf beside this script)
       install uninstall [--part base|monitors|bantool|web] [--root DIR]
       install set-webhook [--verify] [--root DIR]   (the URL, or the file's url=https://... line and its
                         format= and routing_key= lines, on stdin;
                         --verify: in place only once the connectivity test was delivered)
       install set-heartbeat [--remove] [--root DIR]   (the heartbeat URL, the same way; --remove: none)
       install list [--part PART]         (the file table: part, source, destination, mode)
"""


class Usage(Exception):
    """A command line that does not fit USAGE (exit 64 after printing it)."""


class Command(NamedTuple):
    name: str
    parts: list[str]
    remove: bool
    verify: bool
    bundle: Bundle


def install(c: Command, t: Txn) -> None:
    need_root()
    settings = c.bundle.load_settings()
    c.bundle.check_programs(c.parts, t.root, settings)
    txn.lock(t)
    txn.recover(t)
    parts.preflight(t, c.bundle, c.parts, settings)
    for part in c.parts:
        parts.install_part(t, c.bundle, settings, part)
    log.info(f"install done (root {t.root or '/'})")


def uninstall(c: Command, t: Txn) -> None:
    need_root()
    txn.lock(t)
    txn.recover(t)
    for part in c.parts[::-1]:
        parts.uninstall_part(t, part)
    t.drop_store()  # a run killed after its last part's records went and before the store did


def set_webhook(c: Command, t: Txn) -> None:
    need_root()
    txn.lock(t)
    txn.recover(t)
    if urlfiles.set_url_file(t, "webhook", paths.WEBHOOK_PATH, f"{c.bundle.dir}/hostguard-notify", c.verify):
        services.reload_if_running(t.root)  # a running fail2ban's action reads the new file


def set_heartbeat(c: Command, t: Txn) -> None:
    need_root()
    txn.lock(t)
    txn.recover(t)
    if c.remove:
        urlfiles.remove_heartbeat(t)
    else:
        urlfiles.set_url_file(t, "heartbeat", paths.HEARTBEAT_PATH, f"{c.bundle.dir}/hostguard-notify", False)


def list_table(c: Command, _t: Txn) -> None:
    for part in c.parts:
        for src, dest, mode in c.bundle.part_files(part):
            print(f"{part}|{src}|{dest}|0{mode:o}")


def need_root() -> None:
    if os.geteuid() != 0:
        raise HostguardError("install must run as root")


COMMANDS: dict[str, Callable[[Command, Txn], None]] = {
    "install": install, "uninstall": uninstall, "set-webhook": set_webhook, "set-heartbeat": set_heartbeat,
    "list": list_table,
}  # fmt: skip


def parse_args(argv: list[str]) -> tuple[Command, Txn]:
    if not argv:
        raise Usage
    command, rest, opts, remove, verify = argv[0], argv[1:], {}, False, False
    while rest:
        arg = rest.pop(0)
        if arg in ("--part", "--root", "--settings") and rest:
            opts[arg] = rest.pop(0)
        elif arg == "--remove":
            remove = True
        elif arg == "--verify":
            verify = True
        else:
            raise Usage
    root = opts.get("--root", os.environ.get("HOSTGUARD_ROOT") or "/")
    if not root.startswith("/"):
        raise HostguardError("--root must be an absolute path", EX_USAGE)
    if not os.path.isdir(root):
        raise HostguardError(f"--root {root} is not a directory", EX_USAGE)
    root = os.path.realpath(root).rstrip("/")
    part, settings = opts.get("--part", ""), opts.get("--settings", "")
    if part and part not in PARTS:
        raise HostguardError(f"unknown part {part}", EX_USAGE)
    if command not in COMMANDS:
        raise Usage
    if (command.startswith("set-") and (part or settings)) or (remove and command != "set-heartbeat"):
        raise Usage
    if (verify and command != "set-webhook") or (settings and command != "install"):
        raise Usage
    c = Command(command, [part] if part else list(PARTS), remove, verify, Bundle(settings))
    return c, Txn(root, installing=command == "install")


def _interrupted(signum: int, _frame: FrameType | None) -> None:
    raise HostguardError(f"stopped by signal {signum}")


def main(argv: list[str]) -> int:
    os.umask(0o077)
    try:
        c, t = parse_args(argv)
    except Usage:
        sys.stderr.write(USAGE)
        return EX_USAGE
    except HostguardError as exc:
        sys.stderr.write(log.die_line(str(exc)) + "\n")
        return exc.code
    paths.ROOT = t.root
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _interrupted)
    code = run(c, t)
    try:
        if code and t.active:
            t.rollback()
            sys.stderr.write("hostguard: failed; the changes of this part were rolled back\n")
    finally:
        t.finish()
    return code


def run(c: Command, t: Txn) -> int:
    """The command's exit code; its failure named on stderr."""
    try:
        COMMANDS[c.name](c, t)
    except HostguardError as exc:
        sys.stderr.write(log.die_line(str(exc)) + "\n")
        return exc.code
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        sys.stderr.write(log.die_line(f"{exc.strerror or exc}{where}") + "\n")
        return 1
    except Exception as exc:  # any failure rolls the part back, named
        sys.stderr.write(log.die_line(f"{type(exc).__name__}: {exc}") + "\n")
        return 1
    return 0
