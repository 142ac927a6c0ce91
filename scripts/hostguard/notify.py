"""hostguard-notify: the notifier's command line (USAGE): the ban tool's
action, `text` by hand, `flush`, `status`, `--test`.

Exit 0 delivered (an event: spooled for the detached flush), 64 bad usage,
74 an event that could not be kept (disk full: logged as LOST), 75 left in
the spool after a transient failure, 77 refused for good (dead letter, or
the webhook itself refused: kept), 78 a bad webhook or CA file.
"""

import os
import sys
import time

from . import log, paths
from .errors import EX_CONFIG, EX_IOERR, EX_NOPERM, EX_OK, EX_TEMPFAIL, EX_USAGE, HostguardError, UsageError
from .message import as_posted
from .settings import Settings, load
from .spool import EVENTS, Spool, SpoolFull

USAGE = """usage: hostguard-notify text TEXT
       hostguard-notify event start|stop --jail NAME [--channel CHANNEL]
       hostguard-notify event ban --jail NAME --ip IP --failures N --time UNIX
       hostguard-notify event unban --jail NAME --ip IP
       hostguard-notify flush
       hostguard-notify intake      (started by the ban tool's action lines: ban-intake.sh)
       hostguard-notify status
       hostguard-notify --test
"""
FLUSH_LOG = ".flush.log"
INTAKE_HOLD = 60.0
EVENT_DRAIN_MAX = 65536


# ---- text ---------------------------------------------------------------------


def send_text(settings: Settings, text: str) -> int:
    """Spools TEXT and flushes; 0 only when this message was delivered (merged into one that was counts)."""
    from . import delivery

    spool = delivery.own_spool(settings)
    posted = as_posted(settings, text)
    try:
        message_id = spool.enqueue(posted)
    except SpoolFull:
        log.error(f"cannot write the spool in {spool.directory} (disk full?): delivering this alert directly")
        return delivery.deliver_direct(settings, posted)
    rc = delivery.flush_spool(settings)
    outcome = spool.outcome(message_id)
    if outcome == "delivered":
        return EX_OK
    if outcome == "dead":
        return EX_NOPERM
    return rc if rc != EX_OK else EX_TEMPFAIL


# ---- events -------------------------------------------------------------------


def event(settings: Settings, args: list[str]) -> int:
    if not args:
        raise UsageError("event needs a kind")
    from . import events

    text, channel = events.event_text(settings, args[0], events.options(args[1:]))
    return spool_event(settings, text, channel)


def spool_event(settings: Settings, text: str, channel: "str | None") -> int:
    """Spools a ban-tool message and returns at once; a detached flush delivers it.

    The ban tool runs a jail's actions one after another and must never wait
    for the chat service. When the lock is held, its holder delivers this
    message (it looks again after releasing the lock).
    """
    import sqlite3

    from . import events

    spool = Spool(settings.notify_spool_max)
    # What waits in the intake is older: spooled first when that is quick (a
    # small intake, its lock free at once: a ban never waits for it).
    try:
        if os.stat(os.path.join(spool.directory, paths.INTAKE_NAME)).st_size <= EVENT_DRAIN_MAX:
            events.drain(settings, spool, wait=0.0)
    except FileNotFoundError:
        pass
    except (OSError, sqlite3.Error) as error:
        log.warn(f"the ban tool's intake was not taken before this message: {error}")
    try:
        spool.enqueue(as_posted(settings, text), channel, EVENTS)
    except SpoolFull:
        log.error(
            f"cannot write the spool in {spool.directory} (disk full?): this ban-tool message is LOST"
            " (not kept, not sent: a ban never waits for the chat service)"
        )
        return EX_IOERR
    # Committed first, then the lock tried without waiting: when a delivery run
    # holds it, that run looks at the spool after its release (delivery.flush_holding).
    fd = spool.try_lock(0.0)
    if fd is not None:
        start_detached_flush(settings, spool, fd)
    return EX_OK


def deliver_intake() -> int:
    """`intake`: started in the background by the ban-intake.sh writer that made the wake file.

    Writes its pid into the wake file (writers replace a file naming no
    process), detaches, takes the intake into the spool and delivers. When
    another run holds the delivery lock, that run takes these messages after
    its release and removes the wake file then: this run empties the file (a
    run is due) rather than leave its own pid there, which writers would find
    gone and replace with one run per ban. A run that cannot load its
    settings says so in the spool's .flush.log and looks again INTAKE_HOLD
    later, so that a flood starts one a minute, not one every few bans (the
    monitors report the settings too).
    """
    import contextlib

    from . import events
    from .delivery import flush_holding
    from .spool import spool_dir

    with contextlib.suppress(OSError):  # a session of its own, unless it leads a group already (by hand)
        os.setsid()
    directory = spool_dir()
    wake = os.path.join(directory, paths.WAKE_NAME)
    due = _rewrite_wake(wake, f"{os.getpid()}\n")
    _detach_descriptors(os.path.join(directory, FLUSH_LOG), -1)
    try:
        settings = load()
    except HostguardError as error:
        if not due:
            raise
        hold = _intake_hold()
        log.error(f"{error}; the ban tool's messages wait in the intake: looking again in {hold:.0f} s")
        time.sleep(hold)
        settings = load()
    spool = Spool(settings.notify_spool_max)
    events.drain(settings, spool)
    fd = spool.try_lock(0.0)
    if fd is None:
        _rewrite_wake(wake, "")
        return EX_TEMPFAIL
    return flush_holding(settings, spool, fd)


def _intake_hold() -> float:
    """INTAKE_HOLD, or HOSTGUARD_INTAKE_HOLD's seconds (a test hook, never set on a host) when it is 0-3600."""
    try:
        seconds = float(os.environ.get("HOSTGUARD_INTAKE_HOLD", ""))
    except ValueError:
        return INTAKE_HOLD
    return seconds if 0 <= seconds <= 3600 else INTAKE_HOLD


def _rewrite_wake(path: str, text: str) -> bool:
    """Replaces the wake file's content with TEXT; False when there is none. Never creates it: a run
    that has removed it (its last look at the intake done) must not look due again."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(fd, text.encode())
    except OSError:
        pass  # left empty: a run is due (the monitors' next delivery run, at the latest)
    finally:
        os.close(fd)
    return True


def start_detached_flush(settings: Settings, spool: Spool, lock_fd: int) -> None:
    """Forks a flush that holds LOCK_FD, in a session of its own, with no descriptor of the caller's."""
    # SQLite connections must not cross a fork: the child opens its own.
    spool.close()
    log_path = os.path.join(spool.directory, FLUSH_LOG)
    try:
        child = os.fork()
    except OSError as error:
        # Spooled all the same: the next run (a monitor's, the next ban's) delivers it.
        log.warn(f"cannot start the detached flush ({error.strerror}); the message waits in the spool")
        os.close(lock_fd)
        return
    if child != 0:
        os.close(lock_fd)
        return
    rc = 70
    try:
        os.setsid()
        _detach_descriptors(log_path, lock_fd)
        from .delivery import flush_holding

        rc = flush_holding(settings, Spool(spool.spool_max, spool.directory), lock_fd)
    except BaseException as error:
        # The child never returns into the caller's code: it says why in its log and ends.
        log.error(f"the detached flush failed: {error!r}")
    finally:
        os._exit(rc)


def _detach_descriptors(log_path: str, keep: int) -> None:
    """stdin from /dev/null, stdout and stderr to LOG_PATH (else /dev/null), all others but KEEP closed."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError:
        out = os.dup(null)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    from .alert_state import close_all_but

    close_all_but(keep)


# ---- status and the connectivity test ------------------------------------------------


def status_lines(settings: Settings) -> list[str]:
    """The spool depth, dropped ban messages, dead letters, last delivery and error, the webhook's state."""
    import time

    from .delivery import check_webhook, hook_state, own_spool

    spool = own_spool(settings)
    oldest = spool.oldest_created()
    since = "" if oldest is None else time.strftime(", oldest spooled %Y-%m-%d %H:%M:%S", time.localtime(oldest))
    lines = [f"spool: {spool.pending()} message(s) waiting (limit {settings.notify_spool_max}){since}"]
    lines.append(f"dropped: {spool.dropped()} ban-tool message(s) dropped on overflow, not yet announced")
    dead = spool.dead_letters()
    lines.append(f"dead letters: {len(dead)}")
    lines += [f"  msg-{letter.id}  {letter.reason}" for letter in dead]
    lines.append(f"last delivery: {spool.get('last_delivery') or 'never'}")
    lines.append(f"last error: {spool.get('last_error') or 'none'}")
    state = hook_state(spool)
    if state is not None:
        since_text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.since))
        wait = max(0, state.next_probe - int(time.time()))
        lines.append(
            f"webhook: refused by the chat service since {since_text} ({state.why}); messages kept;"
            f" next probe in {wait}s; rotate it with: install set-webhook"
        )
    else:
        try:
            check_webhook(settings)
            lines.append("webhook: ok (not refused)")
        except HostguardError:
            lines.append("webhook: bad webhook file (see: hostguard-notify flush)")
    return lines


def status(settings: Settings) -> int:
    from .redact import redact

    sys.stdout.write("".join(redact(line) + "\n" for line in status_lines(settings)))
    return EX_OK


def _host_name() -> str:
    try:
        with open("/proc/sys/kernel/hostname", encoding="utf-8", errors="replace") as handle:
            name = handle.readline().strip()
    except OSError:
        name = ""
    if not name:
        import socket

        name = socket.gethostname() or "unknown"
    return name


def connectivity_test(settings: Settings) -> int:
    """Posts the test message directly (a stale "webhook OK" delivered later would mislead): 0, 75, 77, 78."""
    import time

    from . import chat, delivery

    spool = delivery.own_spool(settings)
    hook = delivery.load_hook(settings)
    if hook is None:
        return EX_CONFIG
    text = as_posted(settings, f"[Server Alert] \nConnectivity test from {_host_name()}: webhook OK")
    deadline = time.monotonic() + settings.notify_budget
    delivery.pace(spool, deadline)
    left = max(1, int(deadline - time.monotonic()))
    answer = delivery.post(spool, hook, text, None, min(left, settings.notify_max_time))
    if answer.kind == chat.DELIVERED:
        log.info(f"connectivity test delivered: {answer.reason}")
        # A webhook that answers is no longer refused.
        delivery.note(spool, "webhook", None)
        return EX_OK
    if answer.kind == chat.TRANSIENT:
        log.error(f"connectivity test not delivered (transient): {answer.reason}")
        return EX_TEMPFAIL
    if answer.kind == chat.WEBHOOK:
        log.error(f"connectivity test refused: the webhook itself is refused: {answer.reason}")
        delivery.refuse_webhook(spool, hook.identity, answer.reason)
        return EX_NOPERM
    log.error(f"connectivity test refused: {answer.reason}")
    return EX_NOPERM


# ---- main ---------------------------------------------------------------------


def usage(problem: "str | None" = None) -> int:
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
    if verb == "event":
        return event(load(), args)
    if verb == "intake" and not args:
        return deliver_intake()
    if verb == "flush":
        if args not in ([], ["--detached"]):
            return usage()
        # A detached flush only tries the lock: the run holding it delivers what it was started for.
        return _flush(load(), wait=not args)
    if verb in ("status", "--test"):
        if args:
            return usage()
        return status(load()) if verb == "status" else connectivity_test(load())
    raise UsageError(f"unknown command {verb}")


def _flush(settings: Settings, wait: bool) -> int:
    from .delivery import flush, own_spool

    return flush(settings, own_spool(settings), wait=wait)


def main(argv: list[str]) -> int:
    os.umask(0o077)
    try:
        return run(argv)
    except UsageError as error:
        return usage(str(error))
    except HostguardError as error:
        sys.stderr.write(log.die_line(str(error)) + "\n")
        return error.code
    except Exception as error:
        import sqlite3  # loaded by then if the spool was opened

        if not isinstance(error, (sqlite3.Error, OSError)):
            raise
        # The spool database or its directory failed (status, --test's state): say so, no traceback.
        sys.stderr.write(log.die_line(f"the spool failed: {error}") + "\n")
        return EX_TEMPFAIL
    except KeyboardInterrupt:
        return 130
