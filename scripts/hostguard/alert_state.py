"""Per-measure alert state of one monitor, and the alert policy built on it.

ALERT_AFTER_RUNS: a measure fires only after N consecutive runs over its
threshold. ALERT_REPEAT_INTERVAL: a measure that stays over posts again at
most once per interval (0: every run). ALERT_SEND_RESOLVED: a measure that
fired and is back to or under its threshold posts one resolved message. With
the defaults (1, 0, false) every run over posts and nothing else does: the
SPEC's behaviour.

The file sits in the root-only state dir under the monitor's lock, one record
a line, `RUNS<TAB>LAST<TAB>FIRED<TAB>KEY` (the bash monitors' format, so a
host keeps its state across the upgrade): RUNS the consecutive runs over
(capped at ALERT_AFTER_RUNS), LAST the epoch second of the last post (0 when
the repeat interval is 0), FIRED 1 while its alert waits for its resolution,
KEY the measure (callers JSON-encode untrusted names: no tab or newline). A
measure under that never fired has no record. It is replaced atomically, and
only when its text changed (a quiet run writes nothing); a line that is not a
record, or a file that cannot be read, only forgets: the next run may post
again, never less.
"""

from __future__ import annotations

import os
import time

from .metrics import digits
from .settings import Settings

POST = "post"
RESOLVE = "resolve"
HOLD = "hold"
NONE = "none"
# observe()'s ONCE: an event (a container that stopped since the previous
# check) posts once and never repeats; a latched condition (a runtime or a
# disk check that does not answer) posts once and stays fired, silent, until
# it is under again.
EVENT = "once"
LATCH = "latch"

_READ_MAX = 1 << 20


def now() -> int:
    """The clock in epoch seconds; HOSTGUARD_NOW replaces it (tests only)."""
    fixed = os.environ.get("HOSTGUARD_NOW", "")
    if digits(fixed, 12):
        return int(fixed)
    return int(time.time())


def tmp_path(path: str) -> str:
    """The temp file save() writes before renaming it over PATH."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.tmp")


def runtime_files(path: str) -> list[str]:
    """What save() writes for the state file PATH (as on the host), as --runtime-files lines."""
    return [f"state {path}", f"state {tmp_path(path)}"]


def write_atomic(path: str, data: bytes, tmp: str | None = None) -> None:
    """Replaces PATH with DATA: a 0600 temp file in the same directory (TMP,
    default tmp_path(PATH)), fsync, rename, fsync of the directory; a crash
    leaves the old file or the new one."""
    tmp = tmp if tmp is not None else tmp_path(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        # A temp file we made goes; anything else in its way (a directory) stays.
        if os.path.isfile(tmp) and not os.path.islink(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(os.path.dirname(path) or ".")


def fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def parse_record(line: str) -> tuple[str, list[int]] | None:
    """KEY and [RUNS, LAST, FIRED] of a record line; None for anything else."""
    fields = line.split("\t")
    if len(fields) != 4 or not digits(fields[0], 3) or not digits(fields[1], 12) or fields[2] not in ("0", "1"):
        return None
    if not fields[3]:
        return None
    return fields[3], [int(fields[0]), int(fields[1]), int(fields[2])]


class AlertState:
    """The records of one monitor's state file, and the policy's decisions on them."""

    def __init__(self, path: str, after_runs: int, repeat_seconds: int, send_resolved: bool) -> None:
        self.path = path
        self.after_runs = after_runs
        self.repeat_seconds = repeat_seconds
        self.send_resolved = send_resolved
        # key -> [runs, last, fired]; dicts keep file order, new keys last,
        # so an unchanged state gives the same text.
        self.records: dict[str, list[int]] = {}
        self.loaded_text = ""

    @classmethod
    def load(cls, path: str, settings: Settings) -> AlertState:
        state = cls(path, settings.alert_after_runs, settings.alert_repeat_seconds, settings.alert_send_resolved)
        state.read()
        return state

    def read(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                data = handle.read(_READ_MAX)
        except OSError:
            return
        for line in data.decode("utf-8", "replace").split("\n"):
            record = parse_record(line)
            if record is not None:
                self.records[record[0]] = record[1]
        self.loaded_text = self.text()

    def text(self) -> str:
        return "".join(f"{runs}\t{last}\t{fired}\t{key}\n" for key, (runs, last, fired) in self.records.items())

    def observe(self, key: str, over: bool, once: str = "") -> str:
        """Records that KEY is over or under in this run; what to do: POST,
        RESOLVE, HOLD (over, but debounced or inside the repeat interval) or NONE."""
        runs, last, fired = self.records.get(key, [0, 0, 0])
        if not over:
            self.forget(key)
            return RESOLVE if fired and self.send_resolved else NONE
        if runs < self.after_runs:
            runs += 1
        action = HOLD
        if runs >= self.after_runs:
            clock = now()
            if not fired or (once not in (EVENT, LATCH) and self._repeat_due(last, clock)):
                action = POST
                fired = 1
                last = clock if self.repeat_seconds else 0
        if action == POST and once == EVENT and not self.send_resolved:
            # An event that posted and will never repeat or resolve: nothing to keep.
            self.forget(key)
            return action
        self.records[key] = [runs, last, fired]
        return action

    def _repeat_due(self, last: int, clock: int) -> bool:
        # A clock stepped back counts as due: it must not mute an alert for hours.
        return self.repeat_seconds == 0 or clock < last or clock - last >= self.repeat_seconds

    def unfire(self, key: str) -> None:
        """Undoes the post observe() just decided for KEY: its message was lost
        (neither spooled nor delivered), so the next run posts it again."""
        self.records[key] = [self.after_runs, 0, 0]

    def forget(self, key: str) -> None:
        self.records.pop(key, None)

    def fired(self, key: str) -> bool:
        record = self.records.get(key)
        return record is not None and record[2] == 1

    def keys(self, prefix: str) -> list[str]:
        return [key for key in self.records if key.startswith(prefix)]

    def save(self) -> bool:
        """Writes the records when they changed; False (nothing changed on
        disk) when that fails, a full disk for one: the caller logs it and
        still delivers its alerts."""
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
