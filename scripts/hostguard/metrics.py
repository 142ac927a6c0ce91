"""The monitors' figures, each from one /proc-style text (pure: no file is opened here but a directory listing).

Every figure is the one the procps-ng 4 tool the SPEC names prints (top's
us+sy, `free -m`, `uptime`, `uptime -p`, `ps aux | wc -l`) and GNU df's Use%,
computed exactly as the bash monitor did (integers, no float rounding), so a
threshold compares the figure the operator sees. A text that is not what the
kernel writes gives None: the caller decides what a missing figure means.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

_DIGITS18 = re.compile(r"[0-9]{1,18}")
_SAMPLE = re.compile(r"([0-9]{1,18}) ([0-9]{1,18})")
_MEM_VALUE = re.compile(r"[0-9]{1,15}")
_LOAD = re.compile(r"[0-9]+\.[0-9]{2}")
_UPTIME = re.compile(r"([0-9]{1,12})(?:\.([0-9]{1,2}))?")
_DECIMAL = re.compile(r"([0-9]{1,15})(?:\.([0-9]+))?")

# uptime -p's units, longest first, in seconds: (seconds, singular, plural).
_UNITS = (
    (60 * 60 * 24 * 365 * 10, "decade", "decades"),
    (60 * 60 * 24 * 365, "year", "years"),
    (60 * 60 * 24 * 7, "week", "weeks"),
    (60 * 60 * 24, "day", "days"),
    (60 * 60, "hour", "hours"),
)


class CpuSample(NamedTuple):
    """Jiffies of /proc/stat's `cpu` line: busy (user+system) and the total top divides by."""

    busy: int
    total: int

    def text(self) -> str:
        return f"{self.busy} {self.total}"


def first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def cpu_sample(stat: str) -> CpuSample | None:
    """The sample of a /proc/stat text: busy is user+system (top's us+sy), total
    user+nice+system+idle+iowait+irq+softirq+steal (guest is inside user)."""
    fields = first_line(stat).split()
    if len(fields) < 8 or fields[0] != "cpu":
        return None
    # steal is absent on old kernels; everything before it must be there.
    values = (fields[1:9] + ["0"])[:8]
    if not all(_DIGITS18.fullmatch(value) for value in values):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(value) for value in values)
    return CpuSample(user + system, user + nice + system + idle + iowait + irq + softirq + steal)


def parse_sample(text: str) -> CpuSample | None:
    """A sample as cpu.sample stores it (`busy total`)."""
    match = _SAMPLE.fullmatch(text)
    return CpuSample(int(match.group(1)), int(match.group(2))) if match else None


def cpu_percent(before: CpuSample, after: CpuSample) -> str | None:
    """Busy percent between two samples, one decimal, half up; None when the
    counters did not advance or went back (a reboot)."""
    busy = after.busy - before.busy
    total = after.total - before.total
    if total <= 0 or busy < 0 or busy > total:
        return None
    tenths = (busy * 2000 // total + 1) // 2
    return f"{tenths // 10}.{tenths % 10}"


def mem_percent(meminfo: str) -> str | None:
    """used/total x 100 with two decimals, used and total the MiB `free -m` prints:
    used = MemTotal - MemAvailable (MemFree when MemAvailable is missing, 0 or
    above MemTotal, as in some containers), each truncated to MiB."""
    found = {"MemTotal:": 0, "MemFree:": 0, "MemAvailable:": 0}
    for line in meminfo.split("\n"):
        fields = line.split(None, 2)
        if len(fields) >= 2 and fields[0] in found and _MEM_VALUE.fullmatch(fields[1]):
            found[fields[0]] = int(fields[1])
    total, free, avail = found["MemTotal:"], found["MemFree:"], found["MemAvailable:"]
    if avail == 0 or avail > total:
        avail = free
    # MemFree above MemTotal is no kernel's: counted as nothing used.
    used_m = max(total - avail, 0) // 1024
    total_m = total // 1024
    if total_m <= 0:
        return None
    hundredths = (used_m * 20000 // total_m + 1) // 2
    return f"{hundredths // 100}.{hundredths % 100:02d}"


def load_average(loadavg: str) -> str | None:
    """The load averages as `uptime` prints them: `0.52, 0.58, 0.59`."""
    fields = first_line(loadavg).split()[:3]
    if len(fields) != 3 or not all(_LOAD.fullmatch(field) for field in fields):
        return None
    return ", ".join(fields)


def _uptime_part(text: str, count: int, singular: str, plural: str) -> str:
    # procps says "minutes" for anything but exactly 1 (even 0), and the
    # other units in the plural only above 1.
    many = count != 1 if singular == "minute" else count > 1
    return text + ("" if text == "up " else ", ") + f"{count} {plural if many else singular}"


def uptime_pretty(uptime: str) -> str | None:
    """The uptime as `uptime -p` (procps-ng 4.0.x) prints it, its oddities
    included: a unit counts only when the uptime is strictly above it (exactly
    60 s prints `up `, exactly 1 h `up 60 minutes`). Hundredths kept, as
    /proc/uptime gives them."""
    fields = first_line(uptime).split()
    match = _UPTIME.fullmatch(fields[0]) if fields else None
    if match is None:
        return None
    centis = int(match.group(1)) * 100 + int(((match.group(2) or "") + "00")[:2])
    text = "up "
    for unit, singular, plural in _UNITS:
        if centis > unit * 100:
            count = centis // 100 // unit
            centis -= count * unit * 100
            text = _uptime_part(text, count, singular, plural)
    minutes = 0
    if centis > 6000:
        minutes = centis // 100 // 60
        centis -= minutes * 6000
    if minutes != 0 or centis < 6000:
        text = _uptime_part(text, minutes, "minute", "minutes")
    return text


def process_count(proc: str) -> int | None:
    """The line count of `ps aux`: one line per process (a /proc entry whose
    name starts with a digit) plus the header; None when there is none."""
    try:
        with os.scandir(proc) as entries:
            count = sum(1 for entry in entries if "0" <= entry.name[:1] <= "9")
    except OSError:
        return None
    return count + 1 if count else None


def disk_percent(blocks: int, bfree: int, bavail: int) -> int | None:
    """Use% of a file system as GNU df prints it: used/(used+available) x 100,
    rounded up, where available is what a user may still write (f_bavail);
    None when df would print `-`."""
    used = blocks - bfree
    total = used + bavail
    if used < 0 or total <= 0:
        return None
    return (used * 100 + total - 1) // total


def decimal_gt(value: str, threshold: str) -> bool:
    """Whether the decimal VALUE is strictly greater than THRESHOLD (digits,
    an optional fraction): exact, no float rounding (80.001 > 80, 80.000 is not).
    Raises ValueError for anything else."""
    left = _DECIMAL.fullmatch(value)
    right = _DECIMAL.fullmatch(threshold)
    if left is None or right is None:
        raise ValueError(f"not a decimal: {value!r} or {threshold!r}")
    if int(left.group(1)) != int(right.group(1)):
        return int(left.group(1)) > int(right.group(1))
    fraction, other = left.group(2) or "", right.group(2) or ""
    width = max(len(fraction), len(other))
    # Same-length digit strings compare as their numbers.
    return fraction.ljust(width, "0") > other.ljust(width, "0")
