"""Host monitor (cron, every 10 minutes): CPU, memory and disk use, one alert per measure strictly
above its threshold, then delivery and the heartbeat.

Each figure is the one the tool the SPEC names prints (procps-ng 4's top us+sy, `free -m`, `uptime`,
`uptime -p`, `ps aux | wc -l`; GNU df's Use%), read in-process from /proc and statvfs, in integers.
statvfs runs in a forked child bounded by HOSTGUARD_DF_TIMEOUT (default 20 s): a disk check that
fails or does not answer posts one latched "Disk check failed" alert, and while an earlier run's
child that did not answer still runs (host-monitor.df-pid) no run starts another.

Test hooks: HOSTGUARD_ROOT, HOSTGUARD_PROC (replaces /proc), HOSTGUARD_NOW, HOSTGUARD_DF_TIMEOUT,
HOSTGUARD_DF_PATH.
"""

import os
import select
import time

from .. import atomicfile, log, paths
from ..errors import HostguardError
from ..settings import Settings
from . import alert_state

NAME = "host-monitor"
PREFIX = "[Server Alert] \n"
CPU_SAMPLE_PATH = paths.STATE_PATH + "/cpu.sample"
ALERT_STATE_PATH = paths.STATE_PATH + "/host-monitor.alerts"
DF_PID_PATH = paths.STATE_PATH + "/host-monitor.df-pid"
FIRST_SAMPLE_SECONDS = 1.0
DF_TIMEOUT_DEFAULT = "20"
DISK_CHECK_KEY = "disk-check"
# uptime -p's units, longest first, in seconds: (seconds, singular, plural).
_UNITS = (
    (60 * 60 * 24 * 365 * 10, "decade", "decades"),
    (60 * 60 * 24 * 365, "year", "years"),
    (60 * 60 * 24 * 7, "week", "weeks"),
    (60 * 60 * 24, "day", "days"),
    (60 * 60, "hour", "hours"),
)


# ---- the figures (pure: each from one /proc-style text; None for a text the kernel does not write) ----


def cpu_sample(stat: str) -> "tuple[int, int] | None":
    """The (busy, total) jiffies of a /proc/stat text: busy is user+system
    (top's us+sy), total user+nice+system+idle+iowait+irq+softirq+steal (guest
    is inside user)."""
    fields = stat.split("\n", 1)[0].split()
    if len(fields) < 8 or fields[0] != "cpu":
        return None
    # steal is absent on old kernels; everything before it must be there.
    values = (fields[1:9] + ["0"])[:8]
    if not all(alert_state.digits(value, 18) for value in values):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(value) for value in values)
    return user + system, user + nice + system + idle + iowait + irq + softirq + steal


def parse_sample(text: str) -> "tuple[int, int] | None":
    fields = text.split(" ")
    if len(fields) != 2 or not all(alert_state.digits(field, 18) for field in fields):
        return None
    return int(fields[0]), int(fields[1])


def cpu_percent(before: tuple[int, int], after: tuple[int, int]) -> "str | None":
    """Busy percent between two (busy, total) samples, one decimal, half up;
    None when the counters did not advance or went back (a reboot)."""
    busy = after[0] - before[0]
    total = after[1] - before[1]
    if total <= 0 or busy < 0 or busy > total:
        return None
    tenths = (busy * 2000 // total + 1) // 2
    return f"{tenths // 10}.{tenths % 10}"


def mem_percent(meminfo: str) -> "str | None":
    """used/total x 100 with two decimals, used and total the MiB `free -m` prints:
    used = MemTotal - MemAvailable (MemFree when MemAvailable is missing, 0 or
    above MemTotal, as in some containers), each truncated to MiB."""
    found = {"MemTotal:": 0, "MemFree:": 0, "MemAvailable:": 0}
    for line in meminfo.split("\n"):
        fields = line.split(None, 2)
        if len(fields) >= 2 and fields[0] in found and alert_state.digits(fields[1], 15):
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


def load_average(loadavg: str) -> "str | None":
    """The load averages as `uptime` prints them: `0.52, 0.58, 0.59`."""
    fields = loadavg.split("\n", 1)[0].split()[:3]
    for field in fields:
        parts = alert_state.decimal_parts(field, 20, 2)
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


def uptime_pretty(uptime: str) -> "str | None":
    """The uptime as `uptime -p` (procps-ng 4.0.x) prints it, its oddities
    included: a unit counts only when the uptime is strictly above it (exactly
    60 s prints `up `, exactly 1 h `up 60 minutes`). Hundredths kept, as
    /proc/uptime gives them."""
    fields = uptime.split("\n", 1)[0].split()
    parts = alert_state.decimal_parts(fields[0], 12, 2) if fields else None
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


def process_count(proc: str) -> "int | None":
    """The line count of `ps aux`: one line per process (a /proc entry whose
    name starts with a digit) plus the header; None when there is none."""
    try:
        with os.scandir(proc) as entries:
            count = sum(1 for entry in entries if "0" <= entry.name[:1] <= "9")
    except OSError:
        return None
    return count + 1 if count else None


def disk_percent(blocks: int, bfree: int, bavail: int) -> "int | None":
    """Use% of a file system as GNU df prints it: used/(used+available) x 100,
    rounded up, where available is what a user may still write (f_bavail);
    None when df would print `-`."""
    used = blocks - bfree
    total = used + bavail
    if used < 0 or total <= 0:
        return None
    return (used * 100 + total - 1) // total


def read_sample(proc: str) -> tuple[int, int]:
    sample = cpu_sample(atomicfile.read_text(f"{proc}/stat") or "")
    if sample is None:
        raise HostguardError(f"cannot read {proc}/stat")
    return sample


def measure_cpu(proc: str) -> str:
    """CPU busy percent since the previous run's sample (`boot_id busy total`,
    same boot), else over a fresh 1 s sample."""
    boot = atomicfile.first_line(f"{proc}/sys/kernel/random/boot_id") or "-"
    sample_file = paths.under(CPU_SAMPLE_PATH)
    current = read_sample(proc)
    saved_boot, _, saved = atomicfile.first_line(sample_file).partition(" ")
    previous = parse_sample(saved.strip()) if saved_boot == boot else None
    cpu = cpu_percent(previous, current) if previous else None
    if cpu is None:
        previous = current
        time.sleep(FIRST_SAMPLE_SECONDS)
        current = read_sample(proc)
        cpu = cpu_percent(previous, current) or "0.0"
    # Under the lock (a torn write costs the next run a short sample); a full
    # disk must not end the run before its alerts are sent.
    if not atomicfile.write_small(sample_file, f"{boot} {current[0]} {current[1]}\n"):
        log.warn(f"{NAME}: cannot save the CPU sample in {sample_file} (disk full?)")
    return cpu


def df_timeout() -> tuple[float, str]:
    text = os.environ.get("HOSTGUARD_DF_TIMEOUT", "") or DF_TIMEOUT_DEFAULT
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        return float(DF_TIMEOUT_DEFAULT), DF_TIMEOUT_DEFAULT
    return seconds, text


def start_time(pid: int) -> "str | None":
    """PID's start time (/proc/PID/stat field 22): with the pid it names one
    process, never a later one that reused the pid."""
    text = atomicfile.read_text(f"/proc/{pid}/stat")
    fields = text.rpartition(")")[2].split() if text and ")" in text else []
    return fields[19] if len(fields) > 19 else None


def stuck_child() -> "int | None":
    """The pid of an earlier run's statvfs child that did not answer, while that
    very process still runs: root's, with the start time noted (a user's
    process that got the pid since cannot hold the check off)."""
    pid_text, _, started = atomicfile.first_line(paths.under(DF_PID_PATH)).partition(" ")
    if not alert_state.digits(pid_text, 10) or not 0 < int(pid_text) < 1 << 31 or not started:
        return None
    pid = int(pid_text)
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
    return pid if owner == os.geteuid() and start_time(pid) == started else None


def statvfs_child(path: str, write_fd: int) -> None:
    """In the forked child: no descriptor but its pipe (a child stuck in the
    kernel must not hold the lock, nor the log's pipe that cron waits on)."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        atomicfile.close_all_but({write_fd}, lowest=3)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                info = os.fstatvfs(fd)
            finally:
                os.close(fd)
            answer = f"{info.f_blocks} {info.f_bfree} {info.f_bavail}"
        except OSError as error:
            answer = f"E {error.strerror or error}"
        os.write(write_fd, answer.encode("utf-8", "replace"))
        os.close(write_fd)  # the parent sees its end of file now, not after the teardown
    finally:
        os._exit(0)


class DiskCheck:
    """The statvfs child, started before CPU and memory are read so that it
    answers meanwhile. The child that answered is not waited for: it exits
    on its own and init reaps it after the run."""

    def __init__(self) -> None:
        self.path = os.environ.get("HOSTGUARD_DF_PATH", "") or "/"
        self.pid_file = paths.under(DF_PID_PATH)
        self.read_fd = -1
        self.pid = 0
        stuck = stuck_child()
        self.why = f"statvfs({self.path}) has not answered since an earlier run (pid {stuck})"
        if stuck is not None:
            return
        atomicfile.unlink_quietly(self.pid_file)
        self.read_fd, write_fd = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            statvfs_child(self.path, write_fd)
        os.close(write_fd)

    def close(self) -> None:
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def result(self) -> "tuple[int | None, str]":
        if self.read_fd < 0:
            return None, self.why
        seconds, shown = df_timeout()
        try:
            answer = self.answer(seconds)
        finally:
            self.close()
        if answer is None:
            started = start_time(self.pid)
            if started is not None:
                atomicfile.write_small(self.pid_file, f"{self.pid} {started}\n")
            return None, f"statvfs({self.path}) did not answer within {shown} s"
        if answer.startswith("E "):
            return None, f"statvfs({self.path}) failed: {answer[2:]}"
        figures = answer.split()
        disk = disk_percent(*(int(f) for f in figures)) if len(figures) == 3 else None
        return (disk, "") if disk is not None else (None, f"statvfs({self.path}) gave no use figure")

    def answer(self, seconds: float) -> "str | None":
        """The child's line, or None when it has not ended it within SECONDS."""
        deadline = time.monotonic() + seconds
        chunks: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.read_fd], [], [], left)[0]:
                return None
            chunk = os.read(self.read_fd, 4096)
            if not chunk:
                return b"".join(chunks).decode("utf-8", "replace")
            chunks.append(chunk)


class Figures:
    def __init__(self, proc: str) -> None:
        disk_check = DiskCheck()
        try:
            self.cpu = measure_cpu(proc)
            self.memory = required(mem_percent(read(f"{proc}/meminfo")), f"cannot read {proc}/meminfo")
            self.load = required(load_average(read(f"{proc}/loadavg")), f"cannot read {proc}/loadavg")
            self.uptime = required(uptime_pretty(read(f"{proc}/uptime")), f"cannot read {proc}/uptime")
            self.processes = required(process_count(proc), f"cannot list {proc}")
            self.disk, self.disk_why = disk_check.result()
        finally:
            disk_check.close()
        if self.disk is None:
            log.error(f"{NAME}: {self.disk_why}; disk use not checked", err=False)


def read(path: str) -> str:
    return atomicfile.read_text(path) or ""


def required(value: "str | int | None", why: str) -> str:
    if value is None:
        raise HostguardError(why)
    return str(value)


def check_all(run: alert_state.Run, figures: Figures) -> None:
    s = run.settings
    load, processes = f"Load Average: {figures.load}", f"Active Processes: {figures.processes}"
    run.check("cpu", figures.cpu, s.cpu_threshold, *texts("CPU", figures.cpu, load))
    run.check("memory", figures.memory, s.memory_threshold, *texts("Memory", figures.memory, processes))
    if figures.disk is None:
        text = f"Disk check failed: {figures.disk_why}; disk use is not checked until it works again"
        run.observe(DISK_CHECK_KEY, True, text, "", alert_state.LATCH)
        return
    run.observe(DISK_CHECK_KEY, False, "", "Disk check works again: df answers")
    uptime = f"System Uptime: {figures.uptime}"
    run.check("disk", str(figures.disk), s.disk_threshold, *texts("Disk", str(figures.disk), uptime))


def texts(label: str, value: str, more: str) -> tuple[str, str]:
    """The alert and resolved texts of the measure LABEL at VALUE percent, MORE on their second line."""
    return f"High {label} Usage Detected: {value}%\n{more}", f"{label} Usage Back to Normal: {value}%\n{more}"


def monitor(settings: Settings) -> int:
    proc = os.environ.get("HOSTGUARD_PROC", "") or "/proc"
    hostname = atomicfile.first_line(f"{proc}/sys/kernel/hostname") or os.uname().nodename or "unknown"
    timestamp = time.strftime("%Y-%m-%d %H:%M:%S")
    figures = Figures(proc)
    run = alert_state.Run(NAME, PREFIX, paths.under(ALERT_STATE_PATH), settings)
    check_all(run, figures)
    run.save()
    disk = f"{figures.disk}%" if figures.disk is not None else "unknown"
    log.info(
        f"{NAME}: host={hostname} time={timestamp} cpu={figures.cpu}% memory={figures.memory}% disk={disk}"
        f' load="{figures.load}" processes={figures.processes} uptime="{figures.uptime}" {run.summary()}'
    )
    alert_state.deliver(NAME, settings)
    return 0


def main(argv: list[str]) -> int:
    return alert_state.main(NAME, argv, monitor)
