"""The ban tool's messages: their texts (SPEC) and the intake its action lines append them to.

fail2ban runs a jail's actions one ban after another, so the action lines do
not start this interpreter: ban-intake.sh appends one record per message to
INTAKE_NAME in the spool directory, under a shared flock, and the first
writer that creates WAKE_NAME starts `hostguard-notify intake`, which writes
its pid there. `drain` moves the records into the spool database (queue
EVENTS, bounded there) under the exclusive flock, then empties the intake.

A record is `\r\nKIND\tJAIL\tA\tB\tC\t.\n`. A write a full disk cut short
never reads as whole: the next record's `\r` follows it, where a whole one
has its newline (its writer handed the message to the notifier, so it must
not be spooled too). The previous release's notifier, still running during
an upgrade, reads these records too (it logs each `\r` as a cut record), and
this one reads that release's (`\nKIND...\t.\n`).

Exactly once across a crash: the transaction that spools the records also
stores the size and SHA-256 of the intake's bytes they came from (state
INTAKE_KEY); the intake is emptied after the commit, the key cleared after
that. A run that finds the key and the intake starting with those very bytes
skips them (killed before emptying it); otherwise they are gone and the key
is stale. A ban's record holds its time and the others their writer's pid
(as C, which their texts do not use), so a new intake does not start byte
for byte with an old one (a start message after a restart of fail2ban would
otherwise be the same bytes).

Delivery runs drain before every claim and, after releasing the delivery
lock, `settle`: remove the wake file and drain again (delivery.flush_holding).
"""

import os

from . import log, paths
from .errors import UsageError
from .message import as_posted
from .spool import EVENTS, Spool, SpoolFull, lock_within

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .settings import Settings

INTAKE_NAME = paths.INTAKE_NAME
WAKE_NAME = paths.WAKE_NAME
INTAKE_KEY = "intake"
# The writers hold the shared lock for one write of a few dozen bytes.
LOCK_WAIT = 10.0
# The intake is read in one piece: more than this (a day of a large flood
# with delivery down) is read in several runs, this much each.
READ_MAX = 16 << 20
_IP_CHARS = frozenset("0123456789abcdefABCDEF.:/")
_OPTIONS = ("--jail", "--ip", "--failures", "--time", "--channel")


def options(args: "list[str]") -> "dict[str, str]":
    """`--name value` pairs of an `event` command line, by name without the dashes."""
    found: dict[str, str] = {}
    while args:
        if len(args) < 2:
            raise UsageError(f"option {args[0]} needs a value")
        if args[0] not in _OPTIONS:
            raise UsageError(f"unknown option {args[0]}")
        found[args[0][2:]] = args[1]
        args = args[2:]
    return found


def valid_ip(ip: str) -> bool:
    """An address or an address with a /prefix, as fail2ban's <ip> can be (no scope, no name)."""
    import ipaddress

    if not ip or not set(ip) <= _IP_CHARS:
        return False
    try:
        if "/" in ip:
            ipaddress.ip_network(ip, strict=False)
        else:
            ipaddress.ip_address(ip)
    except ValueError:
        return False
    return True


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def event_text(settings: "Settings", kind: str, found: "dict[str, str]") -> "tuple[str, str | None]":
    """The SPEC's text of event KIND (and the channel of start/stop); UsageError when an option is wrong."""
    jail = found.get("jail", "")
    if not jail or any(char < " " or char == "\x7f" for char in jail):
        raise UsageError("--jail NAME is required")
    if kind in ("start", "stop"):
        import re

        from .settings_table import PATTERNS

        channel = found.get("channel", "")
        channel = channel[1:] if channel.startswith("#") else channel
        channel = channel or settings.slack_channel
        if not re.fullmatch(PATTERNS["SLACK_CHANNEL"], channel) or not channel.isascii():
            raise UsageError("invalid --channel")
        return f"Ban tool ({jail}) jail has {'started' if kind == 'start' else 'stopped'}", channel
    if kind not in ("ban", "unban"):
        raise UsageError(f"unknown event {kind}")
    ip = found.get("ip", "")
    if not valid_ip(ip):
        raise UsageError("--ip IP is required")
    if kind == "unban":
        return f"Ban Alert({jail})\n Unbanned IP: *{ip}*", None
    failures, when = found.get("failures", ""), found.get("time", "")
    if not _digits(failures):
        raise UsageError("--failures N is required")
    # A manual banip gives a fractional time; the message shows whole seconds.
    when, dot, fraction = when.partition(".")
    if not _digits(when) or (dot and not _digits(fraction)):
        raise UsageError("--time UNIX is required")
    return f"Ban Alert({jail})\n Banned IP: *{ip}*\n Failures: {failures} failure(s)\n Timestap: {when}", None


# ---- the intake -----------------------------------------------------------------


def record_text(settings: "Settings", record: bytes) -> "tuple[str, str | None]":
    """The message of one intake record (`KIND\\tJAIL\\tA\\tB\\tC\\t.`); UsageError when it is not one."""
    fields = record.decode("utf-8", "replace").split("\t")
    if len(fields) != 6 or fields[5] != ".":
        raise UsageError("not a whole intake record")
    kind, jail, first, failures, when = fields[:5]
    names = {"start": "channel", "stop": "channel"}.get(kind, "ip")
    return event_text(settings, kind, {"jail": jail, names: first, "failures": failures, "time": when})


def settle(settings: "Settings", spool: Spool) -> None:
    """Removes the wake file (no run is due any more), then drains: a writer that found the file
    present appended before this drain; one that comes after it makes the file and starts a run."""
    try:  # noqa: SIM105 - contextlib is one import more
        os.unlink(os.path.join(spool.directory, WAKE_NAME))
    except FileNotFoundError:
        pass
    drain(settings, spool)


def drain(settings: "Settings", spool: Spool, wait: float = LOCK_WAIT) -> int:
    """Moves the intake's records into the spool, then empties it; how many records.

    Leaves the intake as it is when the spool cannot take them (disk full:
    the intake still keeps them) or the writers' lock is not free within
    WAIT seconds (said in the log unless WAIT is 0: the caller only tried).
    """
    import stat

    path = os.path.join(spool.directory, INTAKE_NAME)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return 0
        if not lock_within(fd, wait, 0.01):
            if wait:
                log.warn(f"{path}: its writers held the lock for {wait:.0f} s; left for the next run")
            return 0
        done = _consumed(spool, fd)
        data = os.pread(fd, READ_MAX, done)
        end = len(data) if len(data) < READ_MAX else (data.rfind(b"\n") + 1 or len(data))
        messages: "list[tuple[str, str | None]]" = []  # noqa: UP037 - mypy for 3.9 needs the quotes
        dead: list[tuple[str, str]] = []
        records = data[:end].split(b"\n")
        # After the last newline: a write a full disk cut short (the writers hold the shared lock while they write).
        tail = records.pop()
        if tail.strip(b"\r"):
            log.warn(f"{path}: skipped a record cut short (its writer handed it to the notifier)")
        for record in records:
            if record in (b"", b"\r"):
                continue
            try:
                messages.append(record_text(settings, record))
            except UsageError as error:
                # A write a full disk cut short: its writer failed and gave the message to the notifier.
                if record.endswith(b"\t."):
                    dead.append((record.decode("utf-8", "replace"), f"refused intake record: {error}"))
                else:
                    log.warn(f"{path}: skipped a record cut short (its writer handed it to the notifier)")
        texts = [(as_posted(settings, text), channel) for text, channel in messages]
        size = done + end
        try:
            spool.enqueue_batch(texts, dead, EVENTS, INTAKE_KEY, f"{size} {_prefix_digest(fd, size)}")
        except SpoolFull as error:
            log.error(f"cannot write the spool in {spool.directory} ({error}): the ban tool's messages wait in {path}")
            return 0
        for text, reason in dead:
            log.error(f"{path}: {reason}: kept in the dead letters: {text!r}")
        if size == os.fstat(fd).st_size:
            os.ftruncate(fd, 0)
            spool.put(INTAKE_KEY, None)
        return len(texts) + len(dead)
    finally:
        os.close(fd)


def _consumed(spool: Spool, fd: int) -> int:
    """How many of the intake's first bytes are in the spool already (see the module's text)."""
    value = spool.get(INTAKE_KEY)
    if value is None:
        return 0
    size_text, _, digest = value.partition(" ")
    size = int(size_text) if size_text.isdigit() else -1
    return size if size > 0 and _prefix_digest(fd, size) == digest else 0


def _prefix_digest(fd: int, size: int) -> str:
    """The SHA-256 of the intake's first SIZE bytes (fewer when it is shorter), read a MiB at a time."""
    import hashlib

    digest = hashlib.sha256()
    done = 0
    while done < size:
        chunk = os.pread(fd, min(size - done, 1 << 20), done)
        if not chunk:
            break
        digest.update(chunk)
        done += len(chunk)
    return digest.hexdigest()
