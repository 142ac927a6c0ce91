"""The container runtime (CONTAINER_RUNTIME) as the container monitor asks it: bounded calls, and
what they print read as JSON.

A call is ended after CONTAINER_RUNTIME_TIMEOUT or once it printed OUTPUT_MAX bytes, its whole
process group with it. `ps`, `inspect` and `stats` print one JSON object a line, from a template
naming each field used (PS_FORMAT, INSPECT_FORMAT, STATS_FORMAT): docker and podman render these
the same, while `{{json .}}` is an array on podman and asks docker's daemon for every container's
size, and inspect's whole document carries the image's labels and the environment. Every field
(names, states, error texts: chosen by whoever may run containers) is checked for its type; one
that is not what it should be raises ValueError naming the field, never quoting the line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from typing import NamedTuple

from ..settings import Settings

# One JSON object a line, only the fields read. .Names: docker's comma-joined names, podman's first
# name (a string both); .ID, not .Id, in inspect (podman's field; docker has both).
PS_FORMAT = '{"ID":{{json .ID}},"State":{{json .State}},"Names":{{json .Names}}}'
INSPECT_FORMAT = (
    '{"ID":{{json .ID}},"Name":{{json .Name}},"Status":{{json .State.Status}},'
    '"ExitCode":{{json .State.ExitCode}},"Error":{{json .State.Error}}}'
)
STATS_FORMAT = '{"ID":{{json .ID}},"CPUPerc":{{json .CPUPerc}},"MemPerc":{{json .MemPerc}}}'
# After the timeout: SIGTERM, this long to end, then SIGKILL and one more second.
KILL_AFTER = 4.0
# What one call may print, stdout and stderr together: it is read into
# root's memory. Thousands of containers' lines are well under a MiB; more
# than this is a runtime gone wrong, and the call fails like a hung one.
OUTPUT_MAX = 4 << 20
CONTAINER_ID = re.compile(r"[0-9a-f]{12,64}")
# An inspect's "gone" lines: docker's "Error: No such object: X" (29: lower case); podman's inspect
# (inspectAll) "Error: inspecting object: no such object: \"X\"", any others "error inspecting object: ...".
_NO_SUCH = re.compile(
    r"(error: (inspecting object: )?|error inspecting object: |error response from daemon: )"
    r"no such (object|container): .*",
    re.IGNORECASE,
)
_UNSAFE = re.compile("[\x00\ud800-\udfff]")
_DECODER = json.JSONDecoder()


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


def failed(settings: Settings, verb: str, answer: Answer) -> RuntimeFailed:
    return RuntimeFailed(f"runtime unavailable: {settings.container_runtime} {verb} failed (exit {answer.rc})")


def only_gone(answer: Answer) -> bool:
    """Whether an inspect's errors all say a container is gone (removed since
    the list: expected), not that the runtime did not answer."""
    return all(_NO_SUCH.fullmatch(line) for line in answer.err.splitlines())


def text(value: object) -> str:
    """A JSON string field of the runtime's answer, NUL and lone surrogates as U+FFFD; ValueError else."""
    if not isinstance(value, str):
        raise ValueError("not a JSON string")
    return _UNSAFE.sub("\ufffd", value)


def names(value: object) -> str:
    """ps's .Names: a string (docker: comma-joined; podman: the first), or a list of strings, joined."""
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        return text(",".join(value))
    return text(value)


def container_id(value: object) -> str:
    if not isinstance(value, str) or not CONTAINER_ID.fullmatch(value):
        raise ValueError("not a container ID")
    return value


def exit_code(value: object) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("not an integer")
    return str(value)


def json_object(line: str) -> dict[str, object]:
    """One line as its JSON object; ValueError (not quoting the line) for anything else."""
    try:
        value = json.loads(line)
    except ValueError:
        raise ValueError("not JSON") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def line_id(line: str) -> str:
    """The container ID of a line the runtime printed, for a log line about it; "" when it has none."""
    try:
        return container_id(json_object(line).get("ID"))
    except ValueError:
        return ""


def read_field(found: dict[str, object], key: str, reader: Callable[[object], str]) -> str:
    try:
        return reader(found.get(key))
    except ValueError as error:
        raise ValueError(f"{key}: {error}") from None


def list_line(line: str) -> tuple[str, str, str]:
    """ID, state and names (comma-joined) of a PS_FORMAT line."""
    found = json_object(line)
    return read_field(found, "ID", container_id), read_field(found, "State", text), read_field(found, "Names", names)


def inspect_line(line: str) -> tuple[str, Container]:
    """ID and Container of an INSPECT_FORMAT line (the name without its leading /)."""
    found = json_object(line)
    container_id_, name = read_field(found, "ID", container_id), read_field(found, "Name", text)
    status, code = read_field(found, "Status", text), read_field(found, "ExitCode", exit_code)
    container = Container(status, code, name[1:] if name[:1] == "/" else name, read_field(found, "Error", text))
    return container_id_, container


def stats_line(line: str) -> tuple[str, str, str] | None:
    """ID, CPU and memory figures (as printed) of a STATS_FORMAT line; None for another line."""
    try:
        found = json_object(line)
        return container_id(found.get("ID")), text(found.get("CPUPerc")), text(found.get("MemPerc"))
    except ValueError:
        return None
