"""The monitors' figures, each from one /proc-style text (pure: no file is opened here but a directory listing).

Every figure is the one the procps-ng 4 tool the SPEC names prints (top's
us+sy, `free -m`, `uptime`, `uptime -p`, `ps aux | wc -l`) and GNU df's Use%,
computed exactly as the bash monitor did (integers, no float rounding), so a
threshold compares the figure the operator sees. A text that is not what the
kernel writes gives None: the caller decides what a missing figure means.
"""

from __future__ import annotations

import os

# uptime -p's units, longest first, in seconds: (seconds, singular, plural).
_UNITS = (
    (60 * 60 * 24 * 365 * 10, "decade", "decades"),
    (60 * 60 * 24 * 365, "year", "years"),
    (60 * 60 * 24 * 7, "week", "weeks"),
    (60 * 60 * 24, "day", "days"),
    (60 * 60, "hour", "hours"),
)


def digits(text: str, most: int) -> bool:
    """Whether TEXT is 1 to MOST ASCII digits (str.isdigit alone takes any script's digits).

    String methods rather than re: the host monitor imports only what a quiet run needs."""
    return 0 < len(text) <= most and text.isascii() and text.isdigit()


def decimal_parts(text: str, whole_most: int, fraction_most: int) -> tuple[str, str] | None:
    """TEXT as `digits[.digits]` (whole part 1..WHOLE_MOST, fraction 1..FRACTION_MOST digits when present)."""
    whole, dot, fraction = text.partition(".")
    if not digits(whole, whole_most) or (dot and not digits(fraction, fraction_most)):
        return None
    return whole, fraction


def first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def sample_text(sample: tuple[int, int]) -> str:
    """A sample as cpu.sample stores it: `busy total`."""
    return f"{sample[0]} {sample[1]}"


def cpu_sample(stat: str) -> tuple[int, int] | None:
    """The (busy, total) jiffies of a /proc/stat text: busy is user+system
    (top's us+sy), total user+nice+system+idle+iowait+irq+softirq+steal (guest
    is inside user)."""
    fields = first_line(stat).split()
    if len(fields) < 8 or fields[0] != "cpu":
        return None
    # steal is absent on old kernels; everything before it must be there.
    values = (fields[1:9] + ["0"])[:8]
    if not all(digits(value, 18) for value in values):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(value) for value in values)
    return user + system, user + nice + system + idle + iowait + irq + softirq + steal


def parse_sample(text: str) -> tuple[int, int] | None:
    """A sample as cpu.sample stores it (`busy total`)."""
    fields = text.split(" ")
    if len(fields) != 2 or not all(digits(field, 18) for field in fields):
        return None
    return int(fields[0]), int(fields[1])


def cpu_percent(before: tuple[int, int], after: tuple[int, int]) -> str | None:
    """Busy percent between two (busy, total) samples, one decimal, half up;
    None when the counters did not advance or went back (a reboot)."""
    busy = after[0] - before[0]
    total = after[1] - before[1]
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
        if len(fields) >= 2 and fields[0] in found and digits(fields[1], 15):
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
    for field in fields:
        parts = decimal_parts(field, 20, 2)
        if parts is None or len(parts[1]) != 2:
            return None
    if len(fields) != 3:
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
    parts = decimal_parts(fields[0], 12, 2) if fields else None
    if parts is None:
        return None
    centis = int(parts[0]) * 100 + int((parts[1] + "00")[:2])
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
