"""Container monitor (cron, every 10 minutes): an alert for every container that stopped (or went
away) since the previous check, every watched one (CONTAINER_WATCH) not running, and every running
one above the CPU or memory threshold; then delivery and the heartbeat.

A stop is an event: posted once (after ALERT_AFTER_RUNS runs), never repeated; a watched container
not running repeats per ALERT_REPEAT_INTERVAL. One the runtime no longer knows is "removed" (it ran
at the previous check) or "not found" (watched, never seen). At most three bounded runtime calls a
run (runtime.py); a run that cannot check, or that finds the lock held by a stuck run, alerts once
(latched) and exits 1. State: containers.running (`ID<TAB>JSON name`), container-monitor.alerts,
container-monitor.stuck, the lock.
"""

from __future__ import annotations

import re

from .. import atomicfile, log, paths, runlock
from ..errors import EX_FAILURE
from ..notify import delivery
from ..notify.message import FIRING, Identity, host_name
from ..settings import Settings
from . import alert_state, runtime
from .runtime import CONTAINER_ID, Answer, Container, RuntimeFailed, json_string, quoted

NAME = "container-monitor"
PREFIX = "[Container Alert] \n"
RUNNING_PATH = paths.STATE_PATH + "/containers.running"
ALERT_STATE_PATH = paths.STATE_PATH + "/container-monitor.alerts"
STUCK_PATH = paths.STATE_PATH + "/container-monitor.stuck"
# The alert state's key of "the runtime does not answer".
RUNTIME_KEY = "runtime"
GONE_EXIT_CODE = "unknown"
GONE_ERROR = "No such container"
NO_ERROR = "No specific error"
_USAGE = re.compile(r"([0-9]+(?:\.[0-9]+)?)%")
_READ_MAX = 1 << 20


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

    def load_previous(self) -> None:
        text = atomicfile.read_text(paths.under(RUNNING_PATH), _READ_MAX)
        for line in (text or "").split("\n"):
            container_id, tab, literal = line.partition("\t")
            if not tab or not CONTAINER_ID.fullmatch(container_id):
                continue
            try:
                name, end = json_string(literal, 0)
            except ValueError:
                continue
            if end == len(literal):
                self.previous[container_id] = name

    def list_containers(self) -> None:
        answer = self.ask("cannot list containers", "ps", "--all", "--no-trunc", "--format", runtime.PS_FORMAT)
        if answer.rc != 0:
            raise self.refused("cannot list containers", "ps", answer)
        lines = [line for line in answer.out.split("\n") if line]
        read = sum(self.list_line(line) for line in lines)
        if lines and not read:
            raise self.unreadable("ps", len(lines))

    def list_line(self, line: str) -> bool:
        try:
            container_id, status, names = runtime.list_line(line)
        except ValueError as error:
            self.unparsable("list line", line, error)
            return False
        self.list_ids.append(container_id)
        self.list_state[container_id] = status
        self.name_id[names] = container_id
        # Legacy links give a container several comma-joined names.
        for part in names.split(","):
            self.name_id.setdefault(part, container_id)
        return True

    def unparsable(self, what: str, line: str, error: ValueError) -> None:
        """Logs which field of a line was wrong and its container's ID, never the line: it carries
        whatever the container's owner chose."""
        container_id = runtime.line_id(line) or "unknown"
        log.warn(f"{NAME}: unparsable {what} (container {container_id}): {error}")

    def unreadable(self, verb: str, count: int) -> RuntimeFailed:
        """Lines printed and none of them read: the runtime answers in another form, nothing concluded."""
        runtime_name = self.settings.container_runtime
        return RuntimeFailed(f"runtime unavailable: {runtime_name} {verb} printed {count} lines, none readable")

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
        answer = self.ask("cannot inspect containers", "inspect", "--format", runtime.INSPECT_FORMAT, *ids)
        # Unknown IDs (removed since the list) are expected; anything else
        # means the runtime did not answer and nothing can be concluded.
        if answer.rc != 0 and not runtime.only_gone(answer):
            raise self.refused("cannot inspect containers", "inspect", answer)
        lines = [line for line in answer.out.split("\n") if line]
        read = sum(self.inspected(line) for line in lines)
        if lines and not read:
            raise self.unreadable("inspect", len(lines))

    def inspected(self, line: str) -> bool:
        try:
            container_id, container = runtime.inspect_line(line)
        except ValueError as error:
            self.unparsable("inspect line", line, error)
            return False
        self.info[container_id] = container
        return True

    def stats(self) -> None:
        """One stats call for all running containers. A failed call leaves every
        figure unknown (logged), never "fine"."""
        if not self.running:
            return
        args = ("stats", "--no-stream", "--no-trunc", "--format", runtime.STATS_FORMAT, *self.running)
        try:
            answer = self.ask("stats failed", *args)
        except RuntimeFailed:
            return
        if answer.rc != 0:
            self.log_errors("stats failed", "stats", answer.err)
            return
        for line in answer.out.split("\n"):
            figures = runtime.stats_line(line)
            if figures is not None:
                self.cpu[figures[0]], self.memory[figures[0]] = figures[1], figures[2]

    def log_errors(self, what: str, command: str, err: str) -> None:
        """The runtime's stderr, one log line each, as JSON strings: nothing it says can forge a log line."""
        for line in err.splitlines():
            log.error(f"{NAME}: {what} ({self.settings.container_runtime} {command}): {quoted(line)}")

    def ask(self, what: str, *args: str) -> Answer:
        try:
            return runtime.call(self.settings, *args)
        except RuntimeFailed as failure:
            # The log says why next to what was asked; the alert says it once.
            self.log_errors(what, args[0], str(failure))
            raise

    def refused(self, what: str, command: str, answer: Answer) -> RuntimeFailed:
        self.log_errors(what, command, answer.err)
        return runtime.failed(self.settings, command, answer)

    def stopped(self, once: str, name: str, status: str, code: str, error: str) -> None:
        text = f"Container stopped: {name} (Status: {status})\nExit Code: {code}\nError: {error or NO_ERROR}"
        if self.run.observe("stopped " + quoted(name), True, text, "", once) == alert_state.POST:
            log.info(f"{NAME}: stopped {quoted(name)} status={quoted(status)} exit={code}")

    def seen(self, once: str, container: Container) -> None:
        """The stopped measure of an inspected container: resolved if running, else over."""
        if container.status == "running":
            resolved = f"Container running again: {container.name} (Status: running)"
            self.run.observe("stopped " + container.key_name, False, "", resolved)
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
            done_keys.add(self.judge(once, name, self.info.get(container_id), "removed"))
        for name in self.settings.container_watch:
            container_id = self.name_id.get(name, "")
            if container_id in done_ids:
                continue
            if container_id:
                done_ids.add(container_id)
            done_keys.add(self.judge("", name, self.info.get(container_id), "not found"))
        for key in self.state.keys("stopped "):
            if key not in done_keys:
                self.tracked(key)

    def judge(self, once: str, name: str, container: Container | None, gone: str) -> str:
        """The stopped measure of NAME, as inspected or (None) GONE; its key."""
        if container is None:
            self.stopped(once, name, gone, GONE_EXIT_CODE, GONE_ERROR)
            return "stopped " + quoted(name)
        self.seen(once, container)
        return "stopped " + container.key_name

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
            seen.update(("cpu " + container.key_name, "memory " + container.key_name))
            cpu = self.usage(container, "CPU", self.cpu.get(container_id, ""), s.cpu_threshold)
            memory = self.usage(container, "memory", self.memory.get(container_id, ""), s.memory_threshold)
            log.info(f"{NAME}: running {container.key_name} cpu={cpu} memory={memory}")
        for key in self.state.keys("cpu ") + self.state.keys("memory "):
            if key not in seen:
                self.state.forget(key)

    def usage(self, container: Container, label: str, given: str, threshold: str) -> str:
        """LABEL's measure (CPU, memory) of a running container from the figure stats GAVE."""
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
        name, back = container.name, label[0].upper() + label[1:]
        alert = f"High {label} usage detected: {name} - {value}%"
        resolved = f"{back} usage back to normal: {name} - {value}%"
        self.run.observe(f"{label.lower()} {container.key_name}", over, alert, resolved)
        return value + "%"

    def save_running(self) -> None:
        text = "".join(f"{i}\t{self.info[i].key_name}\n" for i in self.running)
        try:
            atomicfile.write_atomic(paths.under(RUNNING_PATH), text.encode("utf-8"))
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


def held(settings: Settings, path: str) -> int:
    """The exit code of a run that finds the lock held: a stuck run alerts once
    (a hung monitor must not go quiet behind WARN lines) and exits 1."""
    since = runlock.lock_stuck(path, settings)
    if since is None:
        return alert_state.another_run(NAME, path)
    started = runlock.stamp(since)
    stuck_file = paths.under(STUCK_PATH)
    if atomicfile.first_line(stuck_file, 64) == str(since):
        log.error(f"{NAME}: the run started at {started} is still stuck (reported); containers are not checked")
        return EX_FAILURE
    log.error(f"{NAME}: the run started at {started} is stuck (it holds {path}); alerting")
    text = (
        f"Container monitor stuck: a run started at {started} has not finished;"
        " containers are not checked until it does"
    )
    about = Identity(host_name(settings.host_name), "container", "stuck", since, FIRING)
    if delivery.send_alert(settings, PREFIX + text, about):
        atomicfile.write_small(stuck_file, f"{since}\n")
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
    atomicfile.unlink_quietly(paths.under(STUCK_PATH))
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
    run.observe(RUNTIME_KEY, False, "", resolved)
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
    return alert_state.main(NAME, argv, monitor, held)
