"""Host monitor, run by cron every 10 minutes: measures CPU, memory and disk use
and posts one chat alert per measure above its threshold (strictly greater),
then delivers what is spooled and pings the heartbeat.

Reads hostguard.conf, /proc (stat, meminfo, loadavg, uptime, the process
table, hostname, boot_id) and statvfs of the root file system in-process (no
df, top, free or flock child), the previous CPU sample (cpu.sample) and the
alert state (host-monitor.alerts, alert_state.py); writes those two files,
the spool, and one log line per run. A quiet run forks one child (statvfs)
and executes nothing.

A disk check that fails or does not answer (a dying disk or a hung mount
under / can block statvfs in the kernel for good) does not stop the run: the
CPU and memory checks go on and one latched "Disk check failed" alert says
so. statvfs runs in a forked child that holds no descriptor of the lock,
bounded by HOSTGUARD_DF_TIMEOUT (default 20 s); a child that did not answer
is left to the kernel with its pid and start time in host-monitor.df-pid,
and while that very process still runs no run starts another (one stuck
child, not one more every ten minutes).

Test hooks (never set in production): HOSTGUARD_ROOT prefixes hostguard's
paths, HOSTGUARD_PROC replaces /proc, HOSTGUARD_NOW the alert policy's
clock, HOSTGUARD_DF_TIMEOUT the seconds statvfs may take, HOSTGUARD_DF_PATH
the path it measures (default /).
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

from . import alert_state, log, metrics, outbox, paths
from . import settings as settings_module
from .errors import HostguardError
from .settings import Settings

NAME = "host-monitor"
PREFIX = "[Server Alert] \n"
CPU_SAMPLE_PATH = paths.STATE_PATH + "/cpu.sample"
LOCK_PATH = paths.STATE_PATH + "/host-monitor.lock"
ALERT_STATE_PATH = paths.STATE_PATH + "/host-monitor.alerts"
DF_PID_PATH = paths.STATE_PATH + "/host-monitor.df-pid"
# Seconds of the first run's CPU sample, when no previous sample exists.
FIRST_SAMPLE_SECONDS = 1.0
DF_TIMEOUT_DEFAULT = "20"
# The alert state's key of "the disk check does not answer".
DISK_CHECK_KEY = "disk-check"
_READ_MAX = 1 << 16


def runtime_files() -> list[str]:
    """What a run writes, as `state PATH` lines (install records them; uninstall removes them)."""
    lines = [f"state {path}" for path in (CPU_SAMPLE_PATH, LOCK_PATH, DF_PID_PATH)]
    return lines + alert_state.runtime_files(ALERT_STATE_PATH) + settings_module.runtime_files()


def read_text(path: str) -> str | None:
    """A small /proc or state file's text (one read of at most 64 KiB: the
    kernel's own files come in one read, and /proc/sys zeroes a buffer of the
    size asked); None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    try:
        return os.read(fd, _READ_MAX).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def first_line(path: str) -> str:
    """The first line of PATH without blanks around it; empty when unreadable."""
    text = read_text(path)
    return metrics.first_line(text).strip() if text else ""


def take_lock() -> int | None:
    """The lock's descriptor, or None when another run holds it: runs never
    overlap, and the next cron run measures again anyway."""
    os.makedirs(paths.under(paths.STATE_PATH), mode=0o700, exist_ok=True)
    path = paths.under(LOCK_PATH)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        log.warn(f"{NAME}: another run holds {path}; exiting", err=False)
        return None
    # Its mtime says when this run started: the other monitor's heartbeat
    # tells a stuck run by it. Stamping needs no disk space.
    try:  # noqa: SIM105 - contextlib is one import more on every quiet run
        os.utime(fd)
    except OSError:
        pass
    return fd


# ---- CPU --------------------------------------------------------------------


def read_sample(proc: str) -> tuple[int, int]:
    sample = metrics.cpu_sample(read_text(f"{proc}/stat") or "")
    if sample is None:
        raise HostguardError(f"cannot read {proc}/stat")
    return sample


def measure_cpu(proc: str) -> str:
    """CPU busy percent since the previous run's sample (same boot), else over
    a fresh 1 s sample. cpu.sample holds `boot_id busy total`; it is rewritten
    in place (under the lock; a torn write costs the next run a short sample)."""
    boot = first_line(f"{proc}/sys/kernel/random/boot_id") or "-"
    sample_file = paths.under(CPU_SAMPLE_PATH)
    current = read_sample(proc)
    saved_boot, _, saved = first_line(sample_file).partition(" ")
    previous = metrics.parse_sample(saved.strip()) if saved_boot == boot else None
    cpu = metrics.cpu_percent(previous, current) if previous else None
    if cpu is None:
        previous = current
        time.sleep(FIRST_SAMPLE_SECONDS)
        current = read_sample(proc)
        cpu = metrics.cpu_percent(previous, current) or "0.0"
    try:
        fd = os.open(sample_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, f"{boot} {metrics.sample_text(current)}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        # A full disk must not end the run before its alerts are sent.
        log.warn(f"{NAME}: cannot save the CPU sample in {sample_file} (disk full?)")
    return cpu


# ---- disk -------------------------------------------------------------------


def df_timeout() -> tuple[float, str]:
    """HOSTGUARD_DF_TIMEOUT (tests only) as seconds, and as the log says it."""
    text = os.environ.get("HOSTGUARD_DF_TIMEOUT", "") or DF_TIMEOUT_DEFAULT
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        return float(DF_TIMEOUT_DEFAULT), DF_TIMEOUT_DEFAULT
    return seconds, text


def start_time(pid: int) -> str | None:
    """PID's start time (clock ticks since boot, /proc/PID/stat field 22): with
    the pid, it names one process, never a later one that reused the pid."""
    text = read_text(f"/proc/{pid}/stat")
    if not text or ")" not in text:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def stuck_child() -> int | None:
    """The pid of an earlier run's statvfs child that did not answer, while that
    very process still runs: root's (this process's uid), with the start time
    noted. A user's process that got the pid since cannot hold the check off."""
    pid_text, _, started = first_line(paths.under(DF_PID_PATH)).partition(" ")
    if not pid_text.isdigit() or not 0 < int(pid_text) < 1 << 31 or not started:
        return None
    pid = int(pid_text)
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
    if owner != os.geteuid() or start_time(pid) != started:
        return None
    return pid


def statvfs_child(path: str, write_fd: int) -> None:
    """In the forked child: no descriptor but its pipe (a child stuck in the
    kernel must not keep later runs out by the lock, nor hold the log's pipe
    open for cron), statvfs of PATH, one line to the parent, exit."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        for fd in open_fds():
            if fd > 2 and fd != write_fd:
                os.closerange(fd, fd + 1)  # ignores the listing's own, already closed
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
        # The parent reads its end of file now, not after this process's teardown.
        os.close(write_fd)
    finally:
        os._exit(0)


# The statvfs children that answered, to reap.
_answered: list[int] = []


def open_fds() -> list[int]:
    """This process's open descriptors (closing every possible one is 20,000
    system calls where the limit is that high)."""
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, max(os.sysconf("SC_OPEN_MAX"), 1024)))


def read_answer(read_fd: int, pid: int, seconds: float) -> str | None:
    """The child's line, or None when it did not answer within SECONDS. A
    non-blocking pipe polled with a growing pause (from 0.1 ms: an answer
    usually takes less than one), so no select or signal import for it."""
    os.set_blocking(read_fd, False)
    deadline = time.monotonic() + seconds
    pause = 0.0001
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(read_fd, 4096)
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)
            continue
        if not chunk:
            break
        chunks.append(chunk)
    # It answered and is exiting: reaped at the end of the run (reap_children), not waited for here.
    _answered.append(pid)
    return b"".join(chunks).decode("utf-8", "replace")


def reap_children() -> None:
    """Reaps the statvfs children that answered (a child that did not is left to init)."""
    while _answered:
        pid = _answered.pop()
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                _answered.append(pid)
                time.sleep(0.001)
        except ChildProcessError:
            pass


def measure_disk() -> tuple[int | None, str]:
    """Use% of the root file system (df's figure), or None and why not."""
    path = os.environ.get("HOSTGUARD_DF_PATH", "") or "/"
    pid_file = paths.under(DF_PID_PATH)
    stuck = stuck_child()
    if stuck is not None:
        return None, f"statvfs({path}) has not answered since an earlier run (pid {stuck})"
    try:  # noqa: SIM105 - contextlib is one import more on every quiet run
        os.unlink(pid_file)
    except OSError:
        pass  # none (the usual case), or not ours to remove: the check runs anyway
    seconds, shown = df_timeout()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        statvfs_child(path, write_fd)
    os.close(write_fd)
    try:
        answer = read_answer(read_fd, pid, seconds)
    finally:
        os.close(read_fd)
    if answer is None:
        note_stuck(pid_file, pid)
        return None, f"statvfs({path}) did not answer within {shown} s"
    if answer.startswith("E "):
        return None, f"statvfs({path}) failed: {answer[2:]}"
    figures = answer.split()
    disk = metrics.disk_percent(*(int(f) for f in figures)) if len(figures) == 3 else None
    return (disk, "") if disk is not None else (None, f"statvfs({path}) gave no use figure")


def note_stuck(pid_file: str, pid: int) -> None:
    started = start_time(pid)
    if started is None:
        return
    try:
        fd = os.open(pid_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, f"{pid} {started}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass


# ---- the run ----------------------------------------------------------------


class Figures:
    """One run's measures, as the texts and the log line show them."""

    def __init__(self, proc: str) -> None:
        self.cpu = measure_cpu(proc)
        self.memory = required(metrics.mem_percent(read_text(f"{proc}/meminfo") or ""), f"cannot read {proc}/meminfo")
        self.disk, self.disk_why = measure_disk()
        if self.disk is None:
            log.error(f"{NAME}: {self.disk_why}; disk use not checked", err=False)
        self.load = required(metrics.load_average(read_text(f"{proc}/loadavg") or ""), f"cannot read {proc}/loadavg")
        self.uptime = required(metrics.uptime_pretty(read_text(f"{proc}/uptime") or ""), f"cannot read {proc}/uptime")
        self.processes = required(metrics.process_count(proc), f"cannot list {proc}")


def required(value: str | int | None, why: str) -> str:
    if value is None:
        raise HostguardError(why)
    return str(value)


class Run:
    """The alert decisions of one run and what they posted, for the log line."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.state = alert_state.AlertState.load(paths.under(ALERT_STATE_PATH), settings)
        self.fired: list[str] = []
        self.resolved: list[str] = []
        self.held: list[str] = []

    def check(self, key: str, value: str, threshold: str, alert: str, resolved: str) -> None:
        """One measure: strictly greater than THRESHOLD fires."""
        self.observe(key, metrics.decimal_gt(value, threshold), alert, resolved)

    def observe(self, key: str, over: bool, alert: str, resolved: str, once: str = "") -> None:
        action = self.state.observe(key, over, once)
        if action == alert_state.POST:
            self.fired.append(key)
            if not outbox.send_alert(self.settings, PREFIX + alert):
                log.error(f"{NAME}: alert lost ({key}): neither spooled nor delivered; the next run posts it again")
                self.state.unfire(key)
        elif action == alert_state.RESOLVE:
            self.resolved.append(key)
            outbox.send_alert(self.settings, PREFIX + resolved)
        elif action == alert_state.HOLD:
            self.held.append(key)

    def summary(self) -> str:
        text = "alerts=" + (" ".join(self.fired) or "none")
        if self.resolved:
            text += " resolved=" + ",".join(self.resolved)
        if self.held:
            text += " held=" + ",".join(self.held)
        return text


def check_all(run: Run, figures: Figures) -> None:
    s = run.settings
    cpu, memory, load, processes = figures.cpu, figures.memory, figures.load, figures.processes
    run.check(
        "cpu",
        cpu,
        s.cpu_threshold,
        f"High CPU Usage Detected: {cpu}%\nLoad Average: {load}",
        f"CPU Usage Back to Normal: {cpu}%\nLoad Average: {load}",
    )
    run.check(
        "memory",
        memory,
        s.memory_threshold,
        f"High Memory Usage Detected: {memory}%\nActive Processes: {processes}",
        f"Memory Usage Back to Normal: {memory}%\nActive Processes: {processes}",
    )
    if figures.disk is None:
        why = figures.disk_why
        text = f"Disk check failed: {why}; disk use is not checked until it works again"
        run.observe(DISK_CHECK_KEY, True, text, "", alert_state.LATCH)
        return
    disk, uptime = figures.disk, figures.uptime
    run.observe(DISK_CHECK_KEY, False, "", "Disk check works again: df answers")
    run.check(
        "disk",
        str(disk),
        s.disk_threshold,
        f"High Disk Usage Detected: {disk}%\nSystem Uptime: {uptime}",
        f"Disk Usage Back to Normal: {disk}%\nSystem Uptime: {uptime}",
    )


def monitor(settings: Settings) -> None:
    proc = os.environ.get("HOSTGUARD_PROC", "") or "/proc"
    hostname = first_line(f"{proc}/sys/kernel/hostname") or os.uname().nodename or "unknown"
    timestamp = time.strftime("%Y-%m-%d %H:%M:%S")
    figures = Figures(proc)
    run = Run(settings)
    check_all(run, figures)
    if not run.state.save():
        log.warn(f"{NAME}: cannot write {run.state.path}; alerts are still sent")
    disk = f"{figures.disk}%" if figures.disk is not None else "unknown"
    log.info(
        f"{NAME}: host={hostname} time={timestamp} cpu={figures.cpu}% memory={figures.memory}% disk={disk}"
        f' load="{figures.load}" processes={figures.processes} uptime="{figures.uptime}" {run.summary()}'
    )
    status = outbox.flush(settings)
    if status != 0:
        log.warn(f"{NAME}: alerts stay spooled for the next run (notifier exit {status}); no heartbeat")
        return
    from . import heartbeat

    heartbeat.ping(NAME, settings)


def main(argv: list[str]) -> int:
    if argv == ["--runtime-files"]:
        sys.stdout.write("".join(line + "\n" for line in runtime_files()))
        return 0
    settings_file = paths.under(paths.SETTINGS_PATH)
    try:
        if argv:
            raise HostguardError(f"usage: {NAME} [--runtime-files] (settings in {settings_file})")

        settings = settings_module.load()
        lock_fd = take_lock()
        if lock_fd is None:
            return 0
        try:
            monitor(settings)
        finally:
            os.close(lock_fd)
            reap_children()
    except HostguardError as error:
        sys.stderr.write(log.die_line(str(error)) + "\n")
        return error.code
    except OSError as error:
        # The state directory or the lock cannot be made (a read-only or full disk).
        sys.stderr.write(log.die_line(f"{NAME}: {error}") + "\n")
        return 1
    return 0
