"""Container monitor, run by cron every 10 minutes: an alert for every
container that stopped (or went away) since the previous check, every
watched one (CONTAINER_WATCH) not running, and every running one above the
CPU or memory threshold; then delivery and the heartbeat.

A stop since the previous check is an event: it posts once (after
ALERT_AFTER_RUNS runs still stopped), never repeats, and stays tracked only
for that debounce or, with ALERT_SEND_RESOLVED, until it runs again. A
watched container not running is a condition that repeats per
ALERT_REPEAT_INTERVAL. One the runtime no longer knows is "removed" (it ran
at the previous check) or "not found" (watched, never seen).

At most three runtime calls a run whatever the number of containers (`ps
--all`, one `inspect`, one `stats --no-stream`), each ended after
CONTAINER_RUNTIME_TIMEOUT or once it printed OUTPUT_MAX bytes; every
untrusted field is asked for as a JSON string and decoded with json. A run
that cannot check (runtime missing, failing, hung, flooding) alerts once,
latched, and exits 1; so does a run that finds the lock held by a stuck
run: monitoring never goes quiet without saying so.
State: containers.running (`ID<TAB>JSON name`), container-monitor.alerts,
container-monitor.stuck (the stuck run already reported) and the lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from typing import NamedTuple

from . import alert_state, delivery, heartbeat, log, paths
from . import settings as settings_module
from .atomicfile import write_atomic
from .errors import EX_FAILURE, HostguardError
from .message import FIRING, Identity, host_name
from .settings import Settings

NAME = "container-monitor"
PREFIX = "[Container Alert] \n"
RUNNING_PATH = paths.STATE_PATH + "/containers.running"
RUNNING_TMP_PATH = RUNNING_PATH + ".tmp"
LOCK_PATH = paths.STATE_PATH + "/container-monitor.lock"
ALERT_STATE_PATH = paths.STATE_PATH + "/container-monitor.alerts"
STUCK_PATH = paths.STATE_PATH + "/container-monitor.stuck"
# The alert state's key of "the runtime does not answer".
RUNTIME_KEY = "runtime"
# The client turns a literal \t into a tab in ps and stats formats.
PS_FORMAT = r"{{.ID}}\t{{json .State}}\t{{json .Names}}"
INSPECT_FORMAT = "{{.ID}} {{json .State.Status}} {{.State.ExitCode}} {{json .Name}} {{json .State.Error}}"
STATS_FORMAT = r"{{.ID}}\t{{.CPUPerc}}\t{{.MemPerc}}"
GONE_EXIT_CODE = "unknown"
GONE_ERROR = "No such container"
NO_ERROR = "No specific error"
# After the timeout: SIGTERM, this long to end, then SIGKILL and one more second.
KILL_AFTER = 4.0
_ID = re.compile(r"[0-9a-f]{12,64}")
_EXIT_CODE = re.compile(r" (-?[0-9]+) ")
_USAGE = re.compile(r"([0-9]+(?:\.[0-9]+)?)%")
_NO_SUCH = re.compile(r"(Error: |Error response from daemon: )No such (object|container): .*")
_UNSAFE = re.compile("[\x00\ud800-\udfff]")
_DECODER = json.JSONDecoder()
_READ_MAX = 1 << 20
# What one runtime call may print, stdout and stderr together: it is read
# into root's memory, and names and error texts are chosen by whoever may run
# containers. Thousands of containers' lines are well under a MiB; more than
# this is a runtime gone wrong, and the call fails like a hung one.
OUTPUT_MAX = 4 << 20


def quoted(text: str) -> str:
    """TEXT as a JSON string for log lines and alert keys: one line whatever it holds."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def json_string(text: str, start: int) -> tuple[str, int]:
    """The JSON string literal at START of TEXT, decoded, and where it ends. NUL
    and lone surrogates become U+FFFD; anything but one string raises ValueError."""
    value, end = _DECODER.raw_decode(text, start)
    if not isinstance(value, str):
        raise ValueError("not a JSON string")
    return _UNSAFE.sub("\ufffd", value), end


class RuntimeFailed(Exception):
    """The runtime could not be asked (WHY): nothing can be concluded this run."""


class Answer(NamedTuple):
    rc: int
    out: str
    err: str


class Container(NamedTuple):
    status: str
    exit_code: str
    name: str
    error: str

    @property
    def key_name(self) -> str:
        return quoted(self.name)


def end_group(process: subprocess.Popen[bytes]) -> None:
    """Ends a runtime call and its children (its own process group), each wait
    bounded; what it prints meanwhile is not read. One that cannot be killed
    (stuck in the kernel) is left behind."""
    for signum, seconds in ((signal.SIGTERM, KILL_AFTER), (signal.SIGKILL, 1.0)):
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signum)
        try:
            process.wait(timeout=seconds)
            return
        except subprocess.TimeoutExpired:
            continue


def read_output(process: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes] | None:
    """The call's stdout and stderr once it has ended, within TIMEOUT seconds
    (else TimeoutExpired); None as soon as together they exceed OUTPUT_MAX."""
    deadline = time.monotonic() + timeout
    fds = [stream.fileno() for stream in (process.stdout, process.stderr) if stream is not None]
    chunks: dict[int, list[bytes]] = {fd: [] for fd in fds}
    total = 0
    with selectors.DefaultSelector() as selector:
        for fd in fds:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(process.args, timeout)
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fd)
                total += len(chunk)
                if total > OUTPUT_MAX:
                    return None
                chunks[key.fd].append(chunk)
    process.wait(timeout=max(deadline - time.monotonic(), 0.0))
    return b"".join(chunks[fds[0]]), b"".join(chunks[fds[1]])


def call(settings: Settings, *args: str) -> Answer:
    runtime = settings.container_runtime
    timeout = settings.container_runtime_timeout
    try:
        process = subprocess.Popen(
            [runtime, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError:
        raise RuntimeFailed(f"the runtime {runtime} is not found") from None
    try:
        output = read_output(process, timeout)
        why = f"printed over {OUTPUT_MAX >> 20} MiB, the most read from a runtime call"
    except subprocess.TimeoutExpired:
        output, why = None, f"did not answer within {timeout} s"
    finally:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    if output is None:
        end_group(process)
        raise RuntimeFailed(f"runtime unavailable: {runtime} {args[0]} {why}")
    out, err = output
    return Answer(process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def log_errors(what: str, err: str) -> None:
    """The runtime's stderr, one log line each, as JSON strings: nothing it says can forge a log line."""
    for line in err.splitlines():
        log.error(f"{NAME}: {what}: {quoted(line)}")


def failed(settings: Settings, verb: str, answer: Answer) -> RuntimeFailed:
    return RuntimeFailed(f"runtime unavailable: {settings.container_runtime} {verb} failed (exit {answer.rc})")


class Check:
    def __init__(self, settings: Settings, run: alert_state.Run) -> None:
        self.settings = settings
        self.run = run
        self.state = run.state
        self.list_ids: list[str] = []
        self.list_state: dict[str, str] = {}
        self.name_id: dict[str, str] = {}
        self.previous: dict[str, str] = {}
        self.info: dict[str, Container] = {}
        self.cpu: dict[str, str] = {}
        self.memory: dict[str, str] = {}
        self.watched_ids: set[str] = set()
        self.running: list[str] = []

    # ---- what the runtime says ----------------------------------------------

    def load_previous(self) -> None:
        text = alert_state.read_text(paths.under(RUNNING_PATH), _READ_MAX)
        if text is None:
            return
        for line in text.split("\n"):
            container_id, tab, literal = line.partition("\t")
            if not tab or not _ID.fullmatch(container_id):
                continue
            try:
                name, end = json_string(literal, 0)
            except ValueError:
                continue
            if end == len(literal):
                self.previous[container_id] = name

    def list_containers(self) -> None:
        verb = f"cannot list containers ({self.settings.container_runtime} ps)"
        answer = self.ask(verb, "ps", "--all", "--no-trunc", "--format", PS_FORMAT)
        if answer.rc != 0:
            log_errors(verb, answer.err)
            raise failed(self.settings, "ps", answer)
        for line in answer.out.split("\n"):
            if line:
                self.list_line(line)

    def list_line(self, line: str) -> None:
        container_id, _, rest = line.partition("\t")
        try:
            if not _ID.fullmatch(container_id):
                raise ValueError("no ID")
            status, end = json_string(rest, 0)
            if rest[end : end + 1] != "\t":
                raise ValueError("no tab")
            names, end = json_string(rest, end + 1)
            if end != len(rest):
                raise ValueError("trailing text")
        except ValueError:
            log.warn(f"{NAME}: unparsable list line: {quoted(line)}")
            return
        self.list_ids.append(container_id)
        self.list_state[container_id] = status
        self.name_id[names] = container_id
        # Legacy links give a container several comma-joined names.
        for part in names.split(","):
            self.name_id.setdefault(part, container_id)

    def interesting_ids(self) -> list[str]:
        """Worth an inspect: running now, running at the previous check, watched,
        or stopped and still tracked; only those the list still knows."""
        wanted = set(self.previous)
        for name in self.settings.container_watch:
            if name in self.name_id:
                wanted.add(self.name_id[name])
                self.watched_ids.add(self.name_id[name])
        for key in self.state.keys("stopped "):
            tracked = decoded_key(key)
            if tracked is not None and tracked in self.name_id:
                wanted.add(self.name_id[tracked])
        return [i for i in self.list_ids if self.list_state[i] == "running" or i in wanted]

    def inspect(self, ids: list[str]) -> None:
        if not ids:
            return
        verb = f"cannot inspect containers ({self.settings.container_runtime} inspect)"
        answer = self.ask(verb, "inspect", "--format", INSPECT_FORMAT, *ids)
        # Unknown IDs (removed since the list) are expected; anything else
        # means the runtime did not answer and nothing can be concluded.
        if answer.rc != 0 and not all(_NO_SUCH.fullmatch(line) for line in answer.err.splitlines()):
            log_errors(verb, answer.err)
            raise failed(self.settings, "inspect", answer)
        for line in answer.out.split("\n"):
            if line:
                self.inspect_line(line)

    def inspect_line(self, line: str) -> None:
        container_id = line.partition(" ")[0]
        try:
            if not _ID.fullmatch(container_id):
                raise ValueError("no ID")
            status, end = json_string(line, len(container_id) + 1)
            code = _EXIT_CODE.match(line, end)
            if code is None:
                raise ValueError("no exit code")
            name, end = json_string(line, code.end())
            if line[end : end + 1] != " ":
                raise ValueError("no space")
            error, end = json_string(line, end + 1)
            if end != len(line):
                raise ValueError("trailing text")
        except ValueError:
            log.warn(f"{NAME}: unparsable inspect line: {quoted(line)}")
            return
        self.info[container_id] = Container(status, code.group(1), name[1:] if name[:1] == "/" else name, error)

    def stats(self) -> None:
        """One stats call for all running containers. A failed call leaves every
        figure unknown (logged), never "fine"."""
        if not self.running:
            return
        verb = f"stats failed ({self.settings.container_runtime} stats)"
        try:
            answer = self.ask(verb, "stats", "--no-stream", "--no-trunc", "--format", STATS_FORMAT, *self.running)
        except RuntimeFailed:
            return
        if answer.rc != 0:
            log_errors(verb, answer.err)
            return
        for line in answer.out.split("\n"):
            fields = line.split("\t", 2)
            if len(fields) == 3 and _ID.fullmatch(fields[0]):
                self.cpu[fields[0]], self.memory[fields[0]] = fields[1], fields[2]

    def ask(self, verb: str, *args: str) -> Answer:
        try:
            return call(self.settings, *args)
        except RuntimeFailed as failure:
            # The log says why next to what was asked; the alert says it once.
            log_errors(verb, str(failure))
            raise

    # ---- decisions ------------------------------------------------------------

    def measure(self, key: str, over: bool, once: str, text: str, resolved: str) -> str:
        return self.run.observe(key, over, text, resolved, once)

    def stopped(self, once: str, name: str, status: str, code: str, error: str) -> None:
        text = f"Container stopped: {name} (Status: {status})\nExit Code: {code}\nError: {error or NO_ERROR}"
        if self.measure("stopped " + quoted(name), True, once, text, "") == alert_state.POST:
            log.info(f"{NAME}: stopped {quoted(name)} status={quoted(status)} exit={code}")

    def seen(self, once: str, container: Container) -> None:
        """The stopped measure of an inspected container: resolved if running, else over."""
        if container.status == "running":
            resolved = f"Container running again: {container.name} (Status: running)"
            self.measure("stopped " + container.key_name, False, "", "", resolved)
        else:
            self.stopped(once, container.name, container.status, container.exit_code, container.error)

    def check_stopped(self) -> None:
        """Stopped alerts: running at the previous check, watched, or still
        tracked from an earlier run, and not running now."""
        done_ids: set[str] = set()
        done_keys: set[str] = set()
        for container_id, name in self.previous.items():
            done_ids.add(container_id)
            once = "" if container_id in self.watched_ids else alert_state.EVENT
            container = self.info.get(container_id)
            if container is not None:
                done_keys.add("stopped " + container.key_name)
                self.seen(once, container)
            else:
                done_keys.add("stopped " + quoted(name))
                self.stopped(once, name, "removed", GONE_EXIT_CODE, GONE_ERROR)
        for name in self.settings.container_watch:
            container_id = self.name_id.get(name, "")
            if container_id in done_ids:
                continue
            container = self.info.get(container_id)
            if container_id:
                done_ids.add(container_id)
            if container is not None:
                done_keys.add("stopped " + container.key_name)
                self.seen("", container)
            else:
                done_keys.add("stopped " + quoted(name))
                self.stopped("", name, "not found", GONE_EXIT_CODE, GONE_ERROR)
        for key in self.state.keys("stopped "):
            if key not in done_keys:
                self.tracked(key)

    def tracked(self, key: str) -> None:
        """A stop still tracked (debounce, or waiting to resolve) that neither
        ran at the previous check nor is watched."""
        name = decoded_key(key)
        if name is None:
            self.state.forget(key)
            return
        container = self.info.get(self.name_id.get(name, ""))
        if container is not None:
            self.seen(alert_state.EVENT, container)
        elif self.state.fired(key):
            # Gone after its alert: it can never run again under this record.
            self.state.forget(key)
        else:
            self.stopped(alert_state.EVENT, name, "removed", GONE_EXIT_CODE, GONE_ERROR)

    def check_usage(self) -> None:
        """CPU and memory alerts of the running ones; an unknown figure is logged
        and leaves its measure as it was. Records of containers no longer
        running go (their stop has its own alert)."""
        seen: set[str] = set()
        s = self.settings
        for container_id in self.running:
            container = self.info[container_id]
            key_name = container.key_name
            seen.update(("cpu " + key_name, "memory " + key_name))
            cpu = self.usage(container_id, "cpu", "CPU", self.cpu, s.cpu_threshold)
            memory = self.usage(container_id, "memory", "memory", self.memory, s.memory_threshold)
            log.info(f"{NAME}: running {key_name} cpu={cpu} memory={memory}")
        for key in self.state.keys("cpu ") + self.state.keys("memory "):
            if key not in seen:
                self.state.forget(key)

    def usage(self, container_id: str, key: str, label: str, figures: dict[str, str], threshold: str) -> str:
        container = self.info[container_id]
        given = figures.get(container_id, "")
        match = _USAGE.fullmatch(given)
        if match is None:
            shown = quoted(given or "nothing")
            log.warn(f"{NAME}: {label} of {container.key_name} unknown (stats gave {shown}); not checked")
            return "unknown"
        value = match.group(1)
        try:
            over = alert_state.decimal_gt(value, threshold)
        except ValueError:
            over = False
        name = container.name
        high = "CPU" if key == "cpu" else "memory"
        back = "CPU" if key == "cpu" else "Memory"
        self.measure(
            f"{key} {container.key_name}",
            over,
            "",
            f"High {high} usage detected: {name} - {value}%",
            f"{back} usage back to normal: {name} - {value}%",
        )
        return value + "%"

    def save_running(self) -> None:
        text = "".join(f"{i}\t{self.info[i].key_name}\n" for i in self.running)
        try:
            write_atomic(paths.under(RUNNING_PATH), text.encode("utf-8"), paths.under(RUNNING_TMP_PATH))
        except OSError as error:
            log.warn(f"{NAME}: cannot write {paths.under(RUNNING_PATH)}: {error.strerror}")

    def summary(self) -> str:
        run = self.run
        text = (
            f"{NAME}: containers={len(self.list_state)} running={len(self.running)}"
            f" previously_running={len(self.previous)} alerts={len(run.fired)}"
        )
        if run.resolved:
            text += f" resolved={len(run.resolved)}"
        if run.held:
            text += f" held={len(run.held)}"
        return text


def decoded_key(key: str) -> str | None:
    """The container name of a `stopped <JSON name>` key; None when it is not one."""
    literal = key.partition(" ")[2]
    try:
        name, end = json_string(literal, 0)
    except ValueError:
        return None
    return name if end == len(literal) else None


# ---- the run ----------------------------------------------------------------


def held(settings: Settings, path: str) -> int:
    """The exit code of a run that finds the lock held: a stuck run alerts once
    (a hung monitor must not go quiet behind WARN lines) and exits 1."""
    since = heartbeat.lock_stuck(path, settings)
    if since is None:
        return alert_state.another_run(NAME, path)
    started = heartbeat.stamp(since)
    stuck_file = paths.under(STUCK_PATH)
    if alert_state.first_line(stuck_file, 64) == str(since):
        log.error(f"{NAME}: the run started at {started} is still stuck (reported); containers are not checked")
        return EX_FAILURE
    log.error(f"{NAME}: the run started at {started} is stuck (it holds {path}); alerting")
    text = (
        f"Container monitor stuck: a run started at {started} has not finished;"
        " containers are not checked until it does"
    )
    about = Identity(host_name(settings.host_name), "container", "stuck", since, FIRING)
    if delivery.send_alert(settings, PREFIX + text, about):
        alert_state.write_small(stuck_file, f"{since}\n")
    alert_state.deliver(NAME, settings, ping=False)
    return EX_FAILURE


def runtime_failed(run: alert_state.Run, why: str) -> int:
    """The run cannot check the containers (WHY): alerts once (latched until
    the runtime answers again), delivers, exits 1; the previous list is kept."""
    log.error(f"{NAME}: {why}; nothing checked, previous state kept")
    text = f"Container check failed: {why}; containers are not checked until it works again"
    run.observe(RUNTIME_KEY, True, text, "", alert_state.LATCH)
    run.save("")
    alert_state.deliver(NAME, run.settings, ping=False)
    return EX_FAILURE


def monitor(settings: Settings) -> int:
    run = alert_state.Run(NAME, PREFIX, paths.under(ALERT_STATE_PATH), settings)
    check = Check(settings, run)
    check.load_previous()
    try:
        check.list_containers()
        ids = check.interesting_ids()
        check.inspect(ids)
    except RuntimeFailed as failure:
        return runtime_failed(run, str(failure))
    # It answers (again): a latched "check failed" alert resolves.
    resolved = f"Container check works again: {settings.container_runtime} answers"
    check.measure(RUNTIME_KEY, False, "", "", resolved)
    check.running = [i for i in ids if i in check.info and check.info[i].status == "running"]
    check.stats()
    check.check_stopped()
    check.check_usage()
    check.save_running()
    run.save()
    log.info(check.summary())
    alert_state.deliver(NAME, settings)
    return 0


def main(argv: list[str]) -> int:
    try:
        if argv:
            settings_file = paths.under(paths.SETTINGS_PATH)
            raise HostguardError(f"usage: {NAME} (settings in {settings_file})")

        settings = settings_module.load()
        lock_fd = alert_state.take_lock(paths.under(LOCK_PATH))
        if lock_fd is None:
            return held(settings, paths.under(LOCK_PATH))
        alert_state.unlink_quietly(paths.under(STUCK_PATH))
        try:
            return monitor(settings)
        finally:
            os.close(lock_fd)
    except HostguardError as error:
        sys.stderr.write(log.die_line(str(error)) + "\n")
        return error.code
    except OSError as error:
        # The state directory or the lock cannot be made (a read-only or full disk).
        sys.stderr.write(log.die_line(f"{NAME}: {error}") + "\n")
        return EX_FAILURE
