"""hostguard.conf: `KEY=VALUE` lines, `#` comments, parsed (never sourced).

Every key, default, pattern and range comes from settings_table.py, which is
generated from components/settings.ts: the host refuses exactly what preview
refuses. An unknown key or a bad value stops the program with the file, line
and key (never the value: a file may hold anything).
"""

import re

from . import paths
from .errors import HostguardError
from .settings_table import DEFAULTS, LISTS, PATTERNS, RANGES

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_WHITE = " \t\n\r\f\v"
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ_")
MAX_BYTES = 1 << 20


class SettingsError(HostguardError):
    """A line of a settings file that is refused: FILE:LINE: what (exit 1, as before)."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}")
        self.file = file
        self.line = line


def duration_seconds(text: str) -> int:
    """Seconds of a duration as the settings write it: `90`, `30m`, `1h30m` (units s m h d w)."""
    if text.isascii() and text.isdigit():
        return int(text)
    total = 0
    number = ""
    for char in text:
        if char.isascii() and char.isdigit():
            number += char
        elif char in _DURATION_UNITS and number:
            total += int(number) * _DURATION_UNITS[char]
            number = ""
        else:
            raise ValueError(f"not a duration: {text!r}")
    if number or not text:
        raise ValueError(f"not a duration: {text!r}")
    return total


def hundredths(text: str) -> int:
    """A decimal with at most 2 decimals (`80`, `80.5`, `80.25`) in hundredths."""
    whole, _, fraction = text.partition(".")
    if not whole.isdigit() or len(fraction) > 2 or (fraction and not fraction.isdigit()):
        raise ValueError(f"not a decimal: {text!r}")
    return int(whole) * 100 + int((fraction + "00")[:2])


def value_ok(key: str, value: str) -> bool:
    """Whether VALUE is allowed for KEY: the table's pattern (each name of a list) and range."""
    names = [value]
    if key in LISTS:
        if value == "":
            return True
        if value.startswith(",") or value.endswith(","):
            return False
        names = [name.strip(" \t\n\r\f\v") for name in value.split(",")]
    # ASCII only, byte-wise as bash's C locale and JavaScript's RegExp read the table.
    if not value.isascii() and key not in LISTS:
        return False
    pattern = PATTERNS[key]
    if not all(re.fullmatch(pattern, name) for name in names):
        return False
    if key not in RANGES:
        return True
    low, high = RANGES[key]
    try:
        amount = hundredths(str(duration_seconds(value))) if value[-1:] in _DURATION_UNITS else hundredths(value)
    except ValueError:
        return False
    return low * 100 <= amount <= high * 100


class Settings:
    """The validated settings of one host, typed; defaults for keys the file leaves out."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.cpu_threshold = values["CPU_THRESHOLD"]
        self.memory_threshold = values["MEMORY_THRESHOLD"]
        self.disk_threshold = values["DISK_THRESHOLD"]
        self.container_monitor = values["CONTAINER_MONITOR"] == "true"
        self.container_runtime = values["CONTAINER_RUNTIME"]
        self.container_runtime_timeout = int(values["CONTAINER_RUNTIME_TIMEOUT"])
        self.container_watch = [n.strip(" \t\n\r\f\v") for n in values["CONTAINER_WATCH"].split(",") if n.strip()]
        self.notify_ca_file = values["NOTIFY_CA_FILE"]
        self.notify_max_time = int(values["NOTIFY_MAX_TIME"])
        self.notify_attempts = int(values["NOTIFY_ATTEMPTS"])
        self.notify_budget = int(values["NOTIFY_BUDGET"])
        self.notify_spool_max = int(values["NOTIFY_SPOOL_MAX"])
        self.slack_channel = values["SLACK_CHANNEL"]
        self.alert_host_label = values["ALERT_HOST_LABEL"] == "true"
        self.alert_repeat_seconds = duration_seconds(values["ALERT_REPEAT_INTERVAL"])
        self.alert_send_resolved = values["ALERT_SEND_RESOLVED"] == "true"
        self.alert_after_runs = int(values["ALERT_AFTER_RUNS"])
        self.nginx_server_conf = values["NGINX_SERVER_CONF"]
        self.app_properties = values["APP_PROPERTIES"]
        self.host_name = values["HOST_NAME"]


def parse(text: str, file: str) -> Settings:
    """The settings of TEXT (the content of FILE, named in errors)."""
    values = dict(DEFAULTS)
    for number, line in enumerate(text.split("\n"), start=1):
        bare = line.lstrip(_WHITE)
        if not bare or bare.startswith("#"):
            continue
        key, equals, value = line.partition("=")
        if not equals or not key or not set(key) <= _KEY_CHARS or "\n" in value:
            raise SettingsError(file, number, "expected KEY=VALUE")
        if key not in DEFAULTS:
            raise SettingsError(file, number, f"unknown key {key}")
        if not value_ok(key, value):
            raise SettingsError(file, number, f"invalid value for {key}")
        values[key] = value
    return Settings(values)


def load(file: "str | None" = None) -> Settings:
    """The host's settings (hostguard.conf under HOSTGUARD_ROOT); defaults when it is missing. A file over
    MAX_BYTES is refused, never cut (a cut last line is another value)."""
    path = file if file is not None else paths.under(paths.SETTINGS_PATH)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return Settings(dict(DEFAULTS))
    except OSError as error:
        raise SettingsError(path, 0, f"cannot read: {error.strerror}") from None
    if len(data) > MAX_BYTES:
        raise SettingsError(path, 0, f"larger than the settings file's limit of {MAX_BYTES} bytes: refused")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SettingsError(path, line, "not UTF-8 text") from None
    return parse(text, path)
