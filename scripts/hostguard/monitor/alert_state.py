"""The monitors' alert policy on a per-measure state file, and what both monitors share: their
main (usage, settings, run lock) and the end of a run (delivery, heartbeat).

ALERT_AFTER_RUNS: a measure fires only after N consecutive runs over its
threshold. ALERT_REPEAT_INTERVAL: a measure that stays over posts again at
most once per interval (0: every run). ALERT_SEND_RESOLVED: a measure that
fired and is back to or under its threshold posts one resolved message. The
defaults (1, 0, false) are the SPEC's behaviour: every run over posts.

The state file has one record a line, `RUNS<TAB>LAST<TAB>FIRED<TAB>SINCE<TAB>KEY`
(SINCE: when the measure started firing, the episode its alerts carry:
message.Identity); a measure under that never fired has none. It is replaced
atomically when its text changed; a line that is not a record, or a file that
cannot be read, only forgets: the next run may post again, never less.
"""

import os
import sys
import time
from collections.abc import Callable

from .. import log, paths, runlock
from .. import settings as settings_module
from ..atomicfile import read_text, write_atomic
from ..errors import EX_FAILURE, HostguardError
from ..notify import delivery, heartbeat
from ..notify.message import FIRING, RESOLVED, Identity, host_name
from ..settings import Settings

POST = "post"
RESOLVE = "resolve"
HOLD = "hold"
NONE = "none"
# observe()'s ONCE: an event (a container that stopped) posts once and never
# repeats; a latched condition (a runtime or a disk check that does not
# answer) posts once and stays fired, silent, until it is under again.
EVENT = "once"
LATCH = "latch"
Held = Callable[[Settings, str], int]


def digits(text: str, most: int) -> bool:
    """Whether TEXT is 1 to MOST ASCII digits (str.isdigit alone takes any script's digits)."""
    return 0 < len(text) <= most and text.isascii() and text.isdigit()


def decimal_parts(text: str, whole_most: int, fraction_most: int) -> "tuple[str, str] | None":
    """TEXT as `digits[.digits]` (whole part 1..WHOLE_MOST, fraction 1..FRACTION_MOST digits when present)."""
    whole, dot, fraction = text.partition(".")
    if not digits(whole, whole_most) or (dot and not digits(fraction, fraction_most)):
        return None
    return whole, fraction


def decimal_gt(value: str, threshold: str) -> bool:
    """Whether the decimal VALUE is strictly greater than THRESHOLD (digits,
    an optional fraction): exact, no float rounding (80.001 > 80, 80.000 is not).
    Raises ValueError for anything else."""
    left = decimal_parts(value, 15, 1 << 20)
    right = decimal_parts(threshold, 15, 1 << 20)
    if left is None or right is None:
        raise ValueError(f"not a decimal: {value!r} or {threshold!r}")
    if int(left[0]) != int(right[0]):
        return int(left[0]) > int(right[0])
    fraction, other = left[1], right[1]
    width = max(len(fraction), len(other))
    # Same-length digit strings compare as their numbers.
    return fraction.ljust(width, "0") > other.ljust(width, "0")


def now() -> int:
    """The clock in epoch seconds; HOSTGUARD_NOW replaces it (tests only)."""
    fixed = os.environ.get("HOSTGUARD_NOW", "")
    return int(fixed) if digits(fixed, 12) else int(time.time())


def another_run(name: str, path: str) -> int:
    """The exit code of a run that finds the lock held by a run still in time:
    runs never overlap, and the next cron run checks again anyway."""
    log.warn(f"{name}: another run holds {path}; exiting", err=False)
    return 0


def deliver(name: str, settings: Settings, ping: bool = True) -> bool:
    """The end of a run: delivers the spool; True, and the heartbeat pinged
    (PING), when nothing is left in it."""
    status = delivery.flush_spool(settings)
    if status != 0:
        log.warn(f"{name}: alerts stay spooled for the next run (notifier exit {status}); no heartbeat")
        return False
    if ping and os.path.lexists(paths.under(paths.HEARTBEAT_PATH)):
        heartbeat.ping(name, settings)
    return True


def main(name: str, argv: list[str], monitor: Callable[[Settings], int], held: "Held | None" = None) -> int:
    """A monitor's main(ARGV): no arguments, the settings, the run's lock (one
    held by another run: HELD's exit code, else another_run's), then
    MONITOR's; an error is one stderr line and its exit code."""
    try:
        if argv:
            raise HostguardError(f"usage: {name} (settings in {paths.under(paths.SETTINGS_PATH)})")
        settings = settings_module.load()
        lock = runlock.lock_path(name)
        lock_fd = runlock.take(lock)
        if lock_fd is None:
            return held(settings, lock) if held else another_run(name, lock)
        try:
            return monitor(settings)
        finally:
            os.close(lock_fd)
    except HostguardError as error:
        sys.stderr.write(log.die_line(str(error)) + "\n")
        return error.code
    except OSError as error:
        # The state directory or the lock cannot be made (a read-only or full disk).
        sys.stderr.write(log.die_line(f"{name}: {error}") + "\n")
        return EX_FAILURE


def parse_record(line: str) -> "tuple[str, list[int]] | None":
    """KEY and [RUNS, LAST, FIRED, SINCE] of a record line; None for anything else."""
    fields = line.split("\t")
    if len(fields) != 5 or not digits(fields[0], 3) or not digits(fields[1], 12) or fields[2] not in ("0", "1"):
        return None
    if not digits(fields[3], 12) or not fields[4]:
        return None
    return fields[4], [int(fields[0]), int(fields[1]), int(fields[2]), int(fields[3])]


class AlertState:
    def __init__(self, path: str, after_runs: int, repeat_seconds: int, send_resolved: bool) -> None:
        self.path = path
        self.after_runs = after_runs
        self.repeat_seconds = repeat_seconds
        self.send_resolved = send_resolved
        # key -> [runs, last, fired, since], in file order (an unchanged state gives the same text).
        self.records: dict[str, list[int]] = {}
        self.loaded_text = ""

    @classmethod
    def load(cls, path: str, settings: Settings) -> "AlertState":
        state = cls(path, settings.alert_after_runs, settings.alert_repeat_seconds, settings.alert_send_resolved)
        state.read()
        return state

    def read(self) -> None:
        text = read_text(self.path, 1 << 20)
        if text is None:
            return
        for line in text.split("\n"):
            record = parse_record(line)
            if record is not None:
                self.records[record[0]] = record[1]
        # As found: a file holding lines that are not records is written again without them.
        self.loaded_text = text

    def text(self) -> str:
        return "".join("\t".join(map(str, record)) + f"\t{key}\n" for key, record in self.records.items())

    def observe(self, key: str, over: bool, once: str = "") -> str:
        """Records that KEY is over or under in this run; what to do: POST,
        RESOLVE, HOLD (over, but debounced or inside the repeat interval) or NONE."""
        runs, last, fired, since = self.records.get(key, [0, 0, 0, 0])
        if not over:
            self.forget(key)
            return RESOLVE if fired and self.send_resolved else NONE
        if runs < self.after_runs:
            runs += 1
        action = HOLD
        if runs >= self.after_runs:
            clock = now()
            # A clock stepped back counts as due: it must not mute an alert for hours.
            due = self.repeat_seconds == 0 or clock < last or clock - last >= self.repeat_seconds
            if not fired or (once not in (EVENT, LATCH) and due):
                action = POST
                since = since if fired else clock
                fired = 1
                last = clock if self.repeat_seconds else 0
        if action == POST and once == EVENT and not self.send_resolved:
            # An event that posted and will never repeat or resolve: nothing to keep.
            self.forget(key)
            return action
        self.records[key] = [runs, last, fired, since]
        return action

    def unfire(self, key: str) -> None:
        """Undoes the post observe() just decided: its message was lost, so the next run posts it again."""
        self.records[key] = [self.after_runs, 0, 0, 0]

    def forget(self, key: str) -> None:
        self.records.pop(key, None)

    def fired(self, key: str) -> bool:
        record = self.records.get(key)
        return record is not None and record[2] == 1

    def keys(self, prefix: str) -> list[str]:
        return [key for key in self.records if key.startswith(prefix)]

    def save(self) -> bool:
        """Writes the records when they changed; False when that fails (a full
        disk): the caller logs it and still delivers its alerts."""
        text = self.text()
        if text == self.loaded_text:
            return True
        try:
            if text:
                write_atomic(self.path, text.encode("utf-8"))
            elif os.path.lexists(self.path):
                os.unlink(self.path)
        except OSError:
            return False
        self.loaded_text = text
        return True


class Run:
    """One monitor run's alert decisions, what they posted, and the keys for its log line."""

    def __init__(self, name: str, prefix: str, path: str, settings: Settings) -> None:
        self.name = name
        # The monitor as a message names it: "host", "container".
        self.monitor = name.removesuffix("-monitor")
        self.prefix = prefix
        self.settings = settings
        self.state = AlertState.load(path, settings)
        self.fired: list[str] = []
        self.resolved: list[str] = []
        self.held: list[str] = []

    def check(self, key: str, value: str, threshold: str, alert: str, resolved: str) -> None:
        self.observe(key, decimal_gt(value, threshold), alert, resolved)

    def identity(self, key: str, record: "list[int] | None", state: str) -> Identity:
        """KEY's identity on this host: its episode the record's SINCE (now for an event it forgot)."""
        episode = record[3] if record is not None and record[3] else now()
        return Identity(host_name(self.settings.host_name), self.monitor, key, episode, state)

    def observe(self, key: str, over: bool, alert: str, resolved: str, once: str = "") -> str:
        before = self.state.records.get(key)
        action = self.state.observe(key, over, once)
        if action == POST:
            self.fired.append(key)
            about = self.identity(key, self.state.records.get(key), FIRING)
            if not delivery.send_alert(self.settings, self.prefix + alert, about):
                log.error(
                    f"{self.name}: alert lost ({key}): neither spooled nor delivered; the next run posts it again"
                )
                self.state.unfire(key)
        elif action == RESOLVE:
            self.resolved.append(key)
            delivery.send_alert(self.settings, self.prefix + resolved, self.identity(key, before, RESOLVED))
        elif action == HOLD:
            self.held.append(key)
        return action

    def save(self, why: str = "; alerts are still sent") -> None:
        if not self.state.save():
            log.warn(f"{self.name}: cannot write {self.state.path}{why}")

    def summary(self) -> str:
        text = "alerts=" + (" ".join(self.fired) or "none")
        if self.resolved:
            text += " resolved=" + ",".join(self.resolved)
        if self.held:
            text += " held=" + ",".join(self.held)
        return text
