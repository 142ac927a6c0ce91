"""How a program posts: `send_alert` spools a message; `flush` delivers the
spool to the webhook, one run at a time (flock on the spool's .lock),
oldest first, within NOTIFY_BUDGET: it loads the webhook once, puts back what
a killed run had claimed, then claims, posts (`post_once`: the format's
request, one HTTPS exchange, the format's reading of the answer) and
acknowledges one message at a time. A transient failure stops the run (order
kept), a message refused for good goes to the dead letters, a refused webhook
keeps everything and is probed with a back-off until its file changes.

Exactly once but for two cases (README: "An alert arrived twice"): a
process killed between the service's 2xx and the commit that removes the
message posts it again in the next run; a request the service took whole
but did not answer within NOTIFY_MAX_TIME (or a connection broken before
the status line) is a copy at each further attempt, within the run (up to
NOTIFY_ATTEMPTS) and in later runs.
Exit codes: 0 nothing left, 75 something left (transient, budget spent,
lock held), 77 the webhook refused (messages kept), 78 a bad webhook or CA file.
"""

from __future__ import annotations

import os
import sqlite3
import time

from .. import log
from ..errors import EX_CONFIG, EX_NOPERM, EX_OK, EX_TEMPFAIL, ConfigError
from ..settings import Settings
from . import answers, chat, formats, urlfile
from .answers import CHANNEL, DELIVERED, MESSAGE, TRANSIENT, WEBHOOK, Answer
from .message import Identity, Message, as_posted, cut, host_name, sends
from .spool import ALERTS, MERGE_CHARS, STARTING, Spool, SpoolFull, name_of
from .urlfile import Hook
from .webhook import PROBE, WAIT, clear_refusal, refuse_webhook, webhook_plan

# How long a foreground run waits for another run's lock before leaving its
# messages to that run (which looks again after releasing it).
LOCK_WAIT = 5.0
DROPPED_NOTE = "\n({} ban-tool message(s) dropped while the chat service was unreachable)"

# What became of one message in a run.
_DELIVERED, _DEAD, _REFUSED, _LEFT = range(4)


def now_stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


# ---- posting --------------------------------------------------------------------

_spool: Spool | None = None


def own_spool(settings: Settings) -> Spool:
    global _spool
    if _spool is None:
        _spool = Spool(settings.notify_spool_max)
    return _spool


def send_alert(settings: Settings, text: str, identity: Identity) -> bool:
    """Spools TEXT (about IDENTITY) in the alerts queue; True when it is kept or was delivered.

    When the spool cannot be written even with its reserve (disk full), the
    alert is delivered directly: never dropped for want of a spool. False
    means it is lost: the caller must not count it as posted.
    """
    posted = as_posted(settings, text)
    try:
        own_spool(settings).enqueue(posted, None, ALERTS, identity)
        return True
    except SpoolFull:
        log.error(
            f"cannot write the spool in {own_spool(settings).directory} (disk full?): delivering this alert directly"
        )
    return deliver_direct(settings, posted, identity) == 0


def flush_spool(settings: Settings) -> int:
    """Delivers what is spooled (`flush`'s exit codes)."""
    return flush(settings, own_spool(settings))


# ---- the run's state ----------------------------------------------------------


def note(spool: Spool, key: str, value: str | None) -> None:
    """Sets one state value of the spool; a failed write (disk full) is logged, never fatal."""
    try:
        spool.put(key, value)
    except (sqlite3.Error, OSError):
        log.warn(f"cannot write the delivery state {key} in {spool.directory} (disk full?)")


# ---- pacing -------------------------------------------------------------------


def _mono_ms() -> int:
    return int(time.monotonic() * 1000)


def pace(spool: Spool, hook: Hook, deadline: float) -> None:
    """Keeps posts of all runs the format's pace apart, never waiting more than one pace nor past DEADLINE.

    The last post's time is on the monotonic clock (system-wide, not stepped
    with the wall clock); one in the future (a reboot) costs at most a pace.
    """
    last = spool.get("last_post") or ""
    if not last.isdigit():
        return
    now, apart = _mono_ms(), int(formats.FORMATS[hook.format].pace * 1000)
    until = min(int(last) + apart, now + apart, int(deadline * 1000))
    if until > now:
        time.sleep((until - now) / 1000)


def load_hook(settings: Settings, candidate: bool = False) -> Hook | None:
    """The checked webhook (or candidate: urlfile.load), or None after logging why it cannot be used (exit 78)."""
    try:
        return urlfile.load(settings, "webhook", candidate)
    except ConfigError as error:
        log.error(str(error))
        return None


def post_once(hook: Hook, message: Message, max_time: float, spool: Spool | None = None) -> Answer:
    """MESSAGE posted once to HOOK within MAX_TIME seconds: the format's request, one HTTPS exchange, the
    answer as the format reads it. With SPOOL (paced by the caller) the post's time is stamped for the next
    post of any run. The one post of delivery, the direct post and the connectivity test."""
    request = formats.request(hook.format, hook.url, hook.key, message)
    if spool is not None:
        note(spool, "last_post", str(_mono_ms()))
    reply = chat.exchange("POST", request.url, request.body, request.headers, max_time, hook.context)
    return answers.classify(hook.format, reply, message.channel is not None)


# ---- one message --------------------------------------------------------------


def split(text: str, limit: int) -> tuple[str, str]:
    """TEXT's first piece of at most LIMIT characters, ended at a seam of its merged parts (a blank
    line), else at a line's end, else at LIMIT; and the rest."""
    for seam in ("\n\n", "\n"):
        at = text.rfind(seam, 0, limit + 1)
        if at > 0:
            return text[:at], text[at + len(seam) :]
    return text[:limit], text[limit:]


def _deliver_merged(settings: Settings, spool: Spool, message: Message, hook: Hook, deadline: float, limit: int) -> int:
    """Posts a claimed MESSAGE; one merged from parts and longer than LIMIT goes in pieces within it,
    the rest kept in the spool as each piece is delivered: nothing of it is cut away unsent."""
    while message.parts > 1 and len(message.text) > limit:
        head, rest = split(message.text, limit)
        result = _deliver(settings, spool, message._replace(text=head), hook, deadline, rest)
        if result != _DELIVERED:
            return result
        message = message._replace(text=rest)
    return _deliver(settings, spool, message, hook, deadline)


def _deliver(
    settings: Settings, spool: Spool, message: Message, hook: Hook, deadline: float, rest: str | None = None
) -> int:
    """Posts one claimed MESSAGE (with REST: a piece of it, REST kept) until delivered, refused, or out of
    attempts or budget."""
    name = name_of(message.id)
    channel_retried = False
    attempt = 1
    while attempt <= settings.notify_attempts:
        pace(spool, hook, deadline)
        left = int(deadline - time.monotonic())
        if left < 1:
            log.warn(f"not delivered {name}: run budget of {settings.notify_budget}s spent; left in spool")
            break
        text, dropped = with_dropped_note(hook, message.text, spool.dropped())
        answer = post_once(hook, message._replace(text=text), min(left, settings.notify_max_time), spool)
        if answer.kind == DELIVERED:
            _acknowledge(spool, hook, message.id, dropped, attempt, answer, rest)
            return _DELIVERED
        if answer.kind == CHANNEL and not channel_retried:
            channel_retried = True
            message = message._replace(channel=None)
            # Kept without the override, so that a crash now does not repeat the 404.
            spool.drop_channel(message.id)
            log.warn(
                f"{name}: {answer.reason} for its channel override; re-sending it once to the webhook's own channel"
            )
            continue
        result = _failed(settings, spool, hook, message.id, answer, attempt, deadline)
        if result is not None:
            return result
        attempt += 1
    spool.release(message.id)
    return _LEFT


def _failed(
    settings: Settings, spool: Spool, hook: Hook, message_id: int, answer: Answer, attempt: int, deadline: float
) -> int | None:
    """What a post of the message that was not delivered comes to: a dead letter, the webhook refused, left
    in the spool (out of attempts or budget); None after waiting for the next attempt."""
    name = name_of(message_id)
    note(spool, "last_error", f"{now_stamp()} {name}: {answer.reason}")
    if answer.kind in (CHANNEL, MESSAGE):
        _bury(spool, message_id, answer.reason)
        return _DEAD
    if answer.kind == WEBHOOK:
        spool.release(message_id)
        refuse_webhook(spool, hook, answer.reason)
        return _REFUSED
    log.warn(f"not delivered {name}: {answer.reason} (attempt {attempt}/{settings.notify_attempts})")
    wait = answer.retry_after if answer.retry_after is not None else float(attempt)
    if attempt < settings.notify_attempts and time.monotonic() + wait + 1 > deadline:
        log.warn(f"not retrying {name}: the wait of {int(wait * 1000)} ms would pass the run budget; left in spool")
    elif attempt < settings.notify_attempts:
        time.sleep(wait)
        return None
    spool.release(message_id)
    return _LEFT


def with_dropped_note(hook: Hook, text: str, dropped: int) -> tuple[str, int]:
    """TEXT with the note of DROPPED ban-tool messages, TEXT cut so that the note shows, and the count it
    announces (none to PagerDuty, which gets no ban-tool message)."""
    if not dropped or hook.format == "pagerduty":
        return text, 0
    note = DROPPED_NOTE.format(dropped)
    return cut(text, formats.FORMATS[hook.format].text_limit - len(note)) + note, dropped


def _acknowledge(
    spool: Spool, hook: Hook, message_id: int, dropped: int, attempt: int, answer: Answer, rest: str | None
) -> None:
    """The delivered message off the spool, or (REST: the rest of a merged one) the rest kept in its place."""
    name = name_of(message_id)
    if rest is not None:
        spool.delivered_piece(message_id, rest, dropped)
        log.info(f"delivered a piece of {name} (attempt {attempt}); {len(rest)} characters of it left")
        return
    spool.delivered(message_id, dropped)
    if hook.format == "slack" and answer.body != "ok":
        log.warn(f"delivered {name} (attempt {attempt}), but the answer was {answer.reason}, not 200 ok")
    else:
        log.info(f"delivered {name} (attempt {attempt})")


def _bury(spool: Spool, message_id: int, why: str) -> None:
    name = name_of(message_id)
    spool.bury(message_id, f"{now_stamp()} {why}")
    log.warn(f"dead letter {name}: {why}; kept in the dead letters (hostguard-notify status), the next message goes on")


# ---- the run ------------------------------------------------------------------


def _flush_locked(settings: Settings, spool: Spool, hook: Hook, deadline: float) -> int:
    spool.unclaim_all()
    plan = webhook_plan(spool, hook)
    if plan == WAIT:
        return EX_NOPERM
    probing = plan == PROBE
    # A burst of ban-tool messages merged within three quarters of what the format shows: room for the
    # dropped note and for JSON's escapes where the limit is in bytes (Teams), so no ban is cut off;
    # alerts merged at the spool's bound (whatever the format) go in pieces within it.
    merge_chars = min(MERGE_CHARS, formats.FORMATS[hook.format].text_limit * 3 // 4)
    host = host_name(settings.host_name)
    while True:
        message = spool.claim_next(merge_chars)
        if message is None:
            spool.make_reserve()
            return EX_OK
        if not message.identity.host:
            message = message._replace(identity=message.identity._replace(host=host))
        if not sends(hook.format, message.identity):
            spool.delivered(message.id)  # not an answer of the webhook: a probe goes on with the next
            log.info(f"{name_of(message.id)}: not sent: {hook.format} gets no ban-tool notice (a ban never resolves)")
            continue
        result = _deliver_merged(settings, spool, message, hook, deadline, merge_chars)
        if result == _REFUSED:
            return EX_NOPERM
        if result == _LEFT:
            log.warn(f"{spool.pending()} message(s) left in spool for the next run")
            return EX_TEMPFAIL
        if probing:
            probing = False
            clear_refusal(spool)
            log.info("the webhook answers again: delivering the spool")


def flush(settings: Settings, spool: Spool, *, wait: bool = True) -> int:
    """Delivers the spool oldest first: 0 nothing left, 75 something left, 77 webhook refused, 78 bad webhook/CA.

    The hand-off: a writer commits its message, then tries the lock without
    waiting (WAIT False: a detached flush), and delivers nothing when it is
    held. So after releasing the lock a run looks at the spool again and
    takes the lock back when a message waits: a writer that found it taken
    had committed before the release, and that look sees its message (or
    another run holds the lock by then and looks again after its own release).
    """
    try:
        if spool.pending() == 0:
            return EX_OK
    except sqlite3.Error as error:
        return _spool_failed(spool, error)
    hook = load_hook(settings)
    if hook is None:
        return EX_CONFIG
    deadline = time.monotonic() + settings.notify_budget
    try:
        fd = spool.try_lock(LOCK_WAIT if wait else 0.0)
    except (sqlite3.Error, OSError) as error:
        return _spool_failed(spool, error)
    if fd is None:
        log.warn(f"another delivery run holds the spool lock; {spool.pending()} message(s) left to it or the next run")
        return EX_TEMPFAIL
    if spool.get(STARTING) == str(os.getpid()):
        note(spool, STARTING, None)  # the ban action's detached flush holds the lock: it may start another
    while True:
        try:
            rc = _flush_locked(settings, spool, hook, deadline)
        except (sqlite3.Error, OSError) as error:
            # What was claimed stays claimed; the next run puts it back and sends it.
            return _spool_failed(spool, error)
        finally:
            os.close(fd)
        try:
            if rc != EX_OK or spool.pending() == 0:
                return rc
            next_fd = spool.try_lock(0.0)
        except (sqlite3.Error, OSError) as error:
            return _spool_failed(spool, error)
        if next_fd is None:
            return EX_OK  # the run that holds it now looks again after its release
        fd = next_fd


def _spool_failed(spool: Spool, error: Exception) -> int:
    log.error(f"the spool in {spool.directory} failed ({error}); what it holds is left to the next run")
    return EX_TEMPFAIL


def deliver_direct(settings: Settings, text: str, identity: Identity) -> int:
    """One post of TEXT (about IDENTITY) without the spool (it cannot be written): 0 delivered, 75, 77, 78."""
    hook = load_hook(settings)
    if hook is None:
        return EX_CONFIG
    if not sends(hook.format, identity):
        log.info(f"not sent: {hook.format} gets no ban-tool notice (not spooled: disk full)")
        return EX_OK
    answer = post_once(hook, Message(text, None, identity, int(time.time())), settings.notify_max_time)
    if answer.kind == DELIVERED:
        log.info(f"delivered an alert directly (not spooled): {answer.reason}")
        return EX_OK
    if answer.kind == TRANSIENT:
        log.error(f"alert lost: not spooled (disk full) and not delivered: {answer.reason}")
        return EX_TEMPFAIL
    log.error(f"alert lost: not spooled (disk full) and refused: {answer.reason}")
    return EX_NOPERM
