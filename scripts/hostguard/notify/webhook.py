"""The chat service's refusal of the webhook: kept in the spool, probed with a back-off until the
webhook file changes; never probed for a format whose service asks clients to stop (Discord).
"""

from __future__ import annotations

import sqlite3
import time

from .. import log
from ..format_table import FACTS
from ..settings import Settings
from .spool import Refusal, Spool
from .urlfile import Hook, webhook_path

# A refused webhook is probed once per run, at most this often (doubling).
PROBE_FIRST = 600
PROBE_MAX = 3600


def refuse_webhook(spool: Spool, hook: Hook, why: str) -> None:
    """Records that the chat service refuses HOOK; the next probe waits, doubling up to PROBE_MAX (never, when
    the service asks clients to stop: Discord's webhook gone or its token invalid)."""
    identity = hook.identity
    now = int(time.time())
    since, interval = now, PROBE_FIRST
    state = spool.refusal()
    if state is not None and state.identity == identity:
        since, interval = state.since, min(state.interval * 2, PROBE_MAX)
    try:
        spool.set_refusal(Refusal(identity, since, now + interval, interval, why))
    except (sqlite3.Error, OSError):
        log.warn(f"cannot write the webhook's refusal in {spool.directory} (disk full?)")
    log.error(
        f"the chat service refuses the webhook itself ({why}): {spool.pending()} message(s) kept in the spool;"
        f" {next_probe(hook, why, interval)}; rotate it with: install set-webhook"
    )


def stopped(hook: Hook, why: str) -> bool:
    """Whether the service asked clients to stop trying this webhook: Discord's 404 (gone) and 401 (token
    invalid); any other refusal of it (a 403 from a proxy in front) is probed as every format's."""
    never_probe = FACTS[hook.format][3]
    return never_probe and why.startswith(("HTTP 404", "HTTP 401"))


def next_probe(hook: Hook, why: str, seconds: int) -> str:
    """When the refused webhook is tried again, for a log or status line."""
    if stopped(hook, why):
        return (
            "not probed again (the service asks clients to stop) until the webhook file changes"
            " (install set-webhook with a new URL) or hostguard-notify --test delivers"
        )
    return f"next probe in {seconds}s"


def clear_refusal(spool: Spool) -> None:
    try:
        spool.set_refusal(None)
    except (sqlite3.Error, OSError):
        log.warn(f"cannot clear the webhook's refusal in {spool.directory} (disk full?)")


DELIVER, PROBE, WAIT = "deliver", "probe", "wait"


def probe_due(state: Refusal, hook: Hook) -> bool:
    """Whether the refused HOOK is probed now: its next probe is due (one further away than an interval
    means the clock went back: now), unless the service asked clients to stop (stopped)."""
    now = int(time.time())
    due = now >= state.next_probe or state.next_probe - now > state.interval
    return due and not stopped(hook, state.why)


def progress(settings: Settings, spool: Spool, hook: Hook | None) -> str:
    """Why a delivery run started now could post nothing ("" when it could): no usable webhook file (HOOK
    None), or the chat service refuses this webhook and its next probe is not due."""
    if hook is None:
        return f"no usable webhook file {webhook_path()}"
    state = spool.refusal()
    if state is None or state.identity != hook.identity or probe_due(state, hook):
        return ""
    return f"the chat service refuses the webhook ({state.why}) and its next probe is not due"


def webhook_plan(spool: Spool, hook: Hook) -> str:
    """What this run does with the webhook: deliver (not refused, or rotated), probe it once, or wait."""
    state = spool.refusal()
    if state is None:
        return DELIVER
    if state.identity != hook.identity:
        log.info(f"the webhook file changed since the chat service refused it ({state.why}): delivering again")
        clear_refusal(spool)
        return DELIVER
    now = int(time.time())
    if probe_due(state, hook):
        log.info(f"probing the refused webhook ({state.why}) with the oldest message")
        return PROBE
    log.error(
        f"the chat service refuses the webhook ({state.why}): {spool.pending()} message(s) kept;"
        f" {next_probe(hook, state.why, max(0, state.next_probe - now))}; rotate it with: install set-webhook"
    )
    return WAIT
