"""hostguard-notify: the notifier's command line (USAGE): `text` by hand,
`flush`, `status`, `--test`.

Exit 0 delivered, 64 bad usage, 75 left in the spool after a transient
failure, 77 refused for good (dead letter, or the webhook itself refused:
kept), 78 a bad webhook or CA file.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time

from .. import log
from ..errors import EX_CONFIG, EX_NOPERM, EX_OK, EX_TEMPFAIL, EX_USAGE, HostguardError, UsageError
from ..redact import redact
from ..settings import Settings, load
from . import delivery, urlfile, webhook
from .answers import DELIVERED, TRANSIENT, WEBHOOK
from .message import FIRING, NOTICE, RESOLVED, Identity, Message, as_posted, host_name, notice
from .spool import ALERTS, Refusal, SpoolFull

USAGE = """usage: hostguard-notify text TEXT
       hostguard-notify flush
       hostguard-notify status
       hostguard-notify --test [--candidate]
"""


# ---- text ---------------------------------------------------------------------


def send_text(settings: Settings, text: str) -> int:
    """Spools TEXT (a notice; PagerDuty gets it as an incident) and flushes; 0 only when this message was
    delivered (merged into one that was counts)."""
    spool = delivery.own_spool(settings)
    posted = as_posted(settings, text)
    identity = notice(settings, "text", "manual")
    try:
        message_id = spool.enqueue(posted, None, ALERTS, identity)
    except SpoolFull:
        log.error(f"cannot write the spool in {spool.directory} (disk full?): delivering this alert directly")
        return delivery.deliver_direct(settings, posted, identity)
    rc = delivery.flush_spool(settings)
    outcome = spool.outcome(message_id)
    if outcome == "delivered":
        return EX_OK
    if outcome == "pending":
        return rc if rc != EX_OK else EX_TEMPFAIL
    if outcome == "unknown":
        log.error(f"msg-{message_id} is neither waiting, delivered nor a dead letter: counted as not delivered")
    return EX_NOPERM


# ---- status and the connectivity test ------------------------------------------------


def status_lines(settings: Settings) -> list[str]:
    """The spool depth, dropped ban messages, dead letters, last delivery and error, the webhook's state."""
    spool = delivery.own_spool(settings)
    oldest = spool.oldest_created()
    since = "" if oldest is None else time.strftime(", oldest spooled %Y-%m-%d %H:%M:%S", time.localtime(oldest))
    lines = [f"spool: {spool.pending()} message(s) waiting (limit {settings.notify_spool_max}){since}"]
    lines.append(f"dropped: {spool.dropped()} ban-tool message(s) dropped on overflow, not yet announced")
    dead = spool.dead_letters()
    lines.append(f"dead letters: {len(dead)}")
    lines += [f"  msg-{letter.id}  {letter.reason}" for letter in dead]
    lines.append(f"last delivery: {spool.get('last_delivery') or 'never'}")
    lines.append(f"last error: {spool.get('last_error') or 'none'}")
    return [*lines, _webhook_line(settings, spool.refusal())]


def _webhook_line(settings: Settings, state: Refusal | None) -> str:
    """The webhook's state: refused since when and when probed again, a bad file, or ok."""
    try:
        hook = urlfile.load(settings)
    except HostguardError:
        return "webhook: bad webhook file (see: hostguard-notify flush)"
    if state is None:
        return "webhook: ok (not refused)"
    since_text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.since))
    wait = max(0, state.next_probe - int(time.time()))
    return (
        f"webhook: refused by the chat service since {since_text} ({state.why}); messages kept;"
        f" {webhook.next_probe(hook, state.why, wait)}; rotate it with: install set-webhook"
    )


def status(settings: Settings) -> int:
    sys.stdout.write("".join(redact(line) + "\n" for line in status_lines(settings)))
    return EX_OK


def connectivity_test(settings: Settings, candidate: bool = False) -> int:
    """Posts the test message directly (a stale "webhook OK" delivered later would mislead): 0, 75, 77, 78.
    PagerDuty gets no notice: there the test is an incident triggered and at once resolved. CANDIDATE: to the
    webhook `install set-webhook --verify` has not put in place yet; the spool's record of whether the
    webhook in place is refused stays as it is."""
    spool = delivery.own_spool(settings)
    hook = delivery.load_hook(settings, candidate)
    if hook is None:
        return EX_CONFIG
    host, now = host_name(settings.host_name), int(time.time())
    text = as_posted(settings, f"[Server Alert] \nConnectivity test from {host_name()}: webhook OK")
    deadline = time.monotonic() + settings.notify_budget
    for state in (FIRING, RESOLVED) if hook.format == "pagerduty" else (NOTICE,):
        delivery.pace(spool, hook, deadline)
        left = max(1, int(deadline - time.monotonic()))
        message = Message(text, None, Identity(host, "hostguard", "connectivity-test", now, state), now)
        answer = delivery.post_once(hook, message, min(left, settings.notify_max_time), spool)
        if answer.kind != DELIVERED:
            break
    if answer.kind == DELIVERED:
        log.info(f"connectivity test delivered: {answer.reason}")
        if not candidate:
            # A webhook that answers is no longer refused.
            webhook.clear_refusal(spool)
        return EX_OK
    if answer.kind == TRANSIENT:
        log.error(f"connectivity test not delivered (transient): {answer.reason}")
        return EX_TEMPFAIL
    if answer.kind == WEBHOOK:
        log.error(f"connectivity test refused: the webhook itself is refused: {answer.reason}")
        if not candidate:
            webhook.refuse_webhook(spool, hook, answer.reason)
        return EX_NOPERM
    log.error(f"connectivity test refused: {answer.reason}")
    return EX_NOPERM


# ---- main ---------------------------------------------------------------------


def usage(problem: str | None = None) -> int:
    if problem:
        sys.stderr.write(f"hostguard-notify: {problem}\n")
    sys.stderr.write(USAGE)
    return EX_USAGE


def run(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        return usage()
    verb, args = argv[0], argv[1:]
    if verb == "text":
        if len(args) != 1:
            raise UsageError("text takes exactly one argument")
        return send_text(load(), args[0])
    if verb == "flush":
        if args not in ([], ["--detached"]):
            return usage()
        # A detached flush only tries the lock: the run holding it delivers what it was started for.
        return _flush(load(), wait=not args)
    if verb in ("status", "--test"):
        if args not in ([], ["--candidate"]) or (args and verb == "status"):
            return usage()
        return status(load()) if verb == "status" else connectivity_test(load(), candidate=bool(args))
    raise UsageError(f"unknown command {verb}")


def _flush(settings: Settings, wait: bool) -> int:
    return delivery.flush(settings, delivery.own_spool(settings), wait=wait)


def main(argv: list[str]) -> int:
    os.umask(0o077)
    try:
        return run(argv)
    except UsageError as error:
        return usage(str(error))
    except HostguardError as error:
        sys.stderr.write(log.die_line(str(error)) + "\n")
        return error.code
    except (sqlite3.Error, OSError) as error:
        # The spool database or its directory failed (status, --test's state): say so, no traceback.
        sys.stderr.write(log.die_line(f"the spool failed: {error}") + "\n")
        return EX_TEMPFAIL
    except KeyboardInterrupt:
        return 130
