"""Part web's edits of the users' files (webedit.py): the deny include in the nginx server blocks
NGINX_SERVER_CONF loads, the final-document line in APP_PROPERTIES (Spring), and nginx's drop-ins that
depend on the host (realip, worker_shutdown_timeout)."""

from __future__ import annotations

import shutil
import subprocess
import time

from .. import log
from ..errors import HostguardError
from ..settings import Settings
from . import properties, userio, webedit, workershutdown
from .bundle import Bundle
from .txn import Row, Txn
from .txnstore import Rec, Undo

# Part web's http-context drop-in when the stack sets trustedProxies (components/hostFiles.ts).
REALIP_DROPIN = "/etc/nginx/conf.d/hostguard-realip.conf"
KINDS = ("include", "props")


def read(t: Txn, s: Settings, plan: bool = True) -> webedit.Web:
    """The users' files the settings edit, read and checked (with PLAN: their changes planned)."""
    web = webedit.Web(t.root, time.time() + userio.TOTAL_SECONDS, plan)
    if s.nginx_server_conf:
        web.nginx(s.nginx_server_conf)
    if s.app_properties:
        web.props(s.app_properties)
    return web


def check_realip(bundle: Bundle) -> None:
    """With trustedProxies, this nginx has the realip module the drop-in needs."""
    if not any(dest == REALIP_DROPIN for _, dest, _ in bundle.part_files("web")) or not shutil.which("nginx"):
        return
    run = subprocess.run(["nginx", "-V"], capture_output=True, timeout=10, check=False)
    if b"--with-http_realip_module" not in run.stdout + run.stderr:
        raise HostguardError(f"part web: trustedProxies needs nginx's realip module (ngx_http_realip_module)"
                             f" for {REALIP_DROPIN}, and this nginx was built without it (nginx -V); Debian's"
                             " and Ubuntu's nginx packages have it")  # fmt: skip


def not_wanted(t: Txn, bundle: Bundle, part: str) -> set[str]:
    """Rows of PART this host does not get: the worker drop-in where nginx would not read it or the user
    sets their own (install/workershutdown.py)."""
    if part != "web" or workershutdown.DROPIN not in {d for _, d, _ in bundle.part_files(part)}:
        return set()
    return set() if workershutdown.wanted(t.root, t.host) else {workershutdown.DROPIN}


def apply(t: Txn, web: webedit.Web, undoing: bool) -> None:
    """Records every change (install) and journal entry in one step, then writes each file."""
    for level, text in web.notes:
        log.log(level, text)
    if not web.changes:
        return
    entries: list[Undo] = []
    records: list[Row] = []
    for c in web.changes:
        t.saved += 1  # one name per copy of the run (an install may undo, then edit)
        with open(f"{t.work}/user.{t.saved}", "wb") as f:
            f.write(c.old)
        entries.append(("user-file", c.real, c.label, f"{t.work}/user.{t.saved}"))
        records += [] if undoing else [(c.kind, c.real, c.extra[0], "")]
    include = any(c.kind == "include" for c in web.changes)
    # An install owes nginx its reload until done (a killed run's next one reloads), undoing included.
    records += [("reload", "pending", "", "")] if include and t.installing else []
    t.step(add=records, undo=entries)
    t.changed = t.changed or include
    for c in web.changes:
        web.write(c.label, c.real, c.new)
    for c in web.changes:
        log.info(done_line(c, undoing))


def done_line(c: webedit.Change, undoing: bool) -> str:
    if c.kind == "include":
        added = f"added the deny include to {c.extra[1] if c.extra else 0} server and location block(s)"
        return f"removed the deny include from {c.real}" if undoing else f"{added} of {c.real}"
    doc = f"final document {properties.KEY}=false"
    done = f"removed the {doc} from" if undoing else f"appended a {doc} to"
    return f"{done} {c.real}; restart the application to apply it"


def undo(t: Txn, recs: list[Rec]) -> None:
    """The edits of RECS undone, newest first, in one step; their records dropped."""
    if not recs:
        return
    edit = webedit.Web(t.root, time.time() + userio.TOTAL_SECONDS)
    for rec in recs[::-1]:
        edit.undo(rec.kind, rec.path, [rec.a, rec.b])
    apply(t, edit, undoing=True)
    t.step(drop=[r.id for r in recs])


def converge(t: Txn, s: Settings) -> None:
    """The users' files as the current settings edit them: an earlier install's edit they no longer make
    (another or no NGINX_SERVER_CONF or APP_PROPERTIES, a file no longer included) is undone first, as
    uninstall undoes it; then the edits they make are placed."""
    web = read(t, s)
    recs = t.records(*KINDS)
    undo(t, [recs[n] for n in webedit.stale([(r.kind, r.path) for r in recs], web)])
    apply(t, web, undoing=False)
