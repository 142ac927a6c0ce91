"""The settings table of hostguard.conf, generated from components/settings.ts.

Do not edit the block below by hand: `npm run settings:gen` writes it, and a
unit test fails when it differs from the TypeScript table.
"""

# BEGIN settings table (generated from components/settings.ts by `npm run settings:gen`; do not edit)
# Defaults of every setting; settings.load refuses keys not listed here.
DEFAULTS: dict[str, str] = {
    "CPU_THRESHOLD": "80",
    "MEMORY_THRESHOLD": "90",
    "DISK_THRESHOLD": "90",
    "CONTAINER_MONITOR": "true",
    "CONTAINER_RUNTIME": "docker",
    "CONTAINER_RUNTIME_TIMEOUT": "60",
    "CONTAINER_WATCH": "",
    "NOTIFY_CA_FILE": "",
    "NOTIFY_MAX_TIME": "10",
    "NOTIFY_ATTEMPTS": "3",
    "NOTIFY_BUDGET": "40",
    "NOTIFY_SPOOL_MAX": "1000",
    "SLACK_CHANNEL": "alerts",
    "ALERT_HOST_LABEL": "false",
    "ALERT_REPEAT_INTERVAL": "0",
    "ALERT_SEND_RESOLVED": "false",
    "ALERT_AFTER_RUNS": "1",
    "NGINX_SERVER_CONF": "",
    "APP_PROPERTIES": "",
    "HOST_NAME": "",
}
# Which values each key accepts, matched in full (a list: each name, trimmed).
PATTERNS: dict[str, str] = {
    "CPU_THRESHOLD": "^(0|[1-9][0-9]{0,2})(\\.[0-9]{1,2})?$",
    "MEMORY_THRESHOLD": "^(0|[1-9][0-9]{0,2})(\\.[0-9]{1,2})?$",
    "DISK_THRESHOLD": "^(0|[1-9][0-9]{0,2})(\\.[0-9]{1,2})?$",
    "CONTAINER_MONITOR": "^(true|false)$",
    "CONTAINER_RUNTIME": "^([A-Za-z0-9_][A-Za-z0-9._-]{0,63}|(/\\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)$",
    "CONTAINER_RUNTIME_TIMEOUT": "^(0|[1-9][0-9]{0,8})$",
    "CONTAINER_WATCH": "^[^\\x00-\\x1f\\x7f,]{1,128}$",
    "NOTIFY_CA_FILE": "^((/\\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)?$",
    "NOTIFY_MAX_TIME": "^(0|[1-9][0-9]{0,8})$",
    "NOTIFY_ATTEMPTS": "^(0|[1-9][0-9]{0,8})$",
    "NOTIFY_BUDGET": "^(0|[1-9][0-9]{0,8})$",
    "NOTIFY_SPOOL_MAX": "^(0|[1-9][0-9]{0,8})$",
    "SLACK_CHANNEL": "^[a-z0-9][a-z0-9._-]{0,79}$",
    "ALERT_HOST_LABEL": "^(true|false)$",
    "ALERT_REPEAT_INTERVAL": "^((0|[1-9][0-9]{0,8})|((0|[1-9][0-9]{0,8})[smhdw])+)$",
    "ALERT_SEND_RESOLVED": "^(true|false)$",
    "ALERT_AFTER_RUNS": "^(0|[1-9][0-9]{0,8})$",
    "NGINX_SERVER_CONF": "^((/\\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)?$",
    "APP_PROPERTIES": "^((/\\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)+)?$",
    "HOST_NAME": "^([a-z0-9][a-z0-9-]{0,39})?$",
}
# Keys holding comma-separated lists of names.
LISTS: frozenset[str] = frozenset({
    "CONTAINER_WATCH",
})
# Inclusive (min, max) of the numeric keys (a duration's in seconds).
RANGES: dict[str, tuple[int, int]] = {
    "CPU_THRESHOLD": (0, 100),
    "MEMORY_THRESHOLD": (0, 100),
    "DISK_THRESHOLD": (0, 100),
    "CONTAINER_RUNTIME_TIMEOUT": (1, 300),
    "NOTIFY_MAX_TIME": (1, 300),
    "NOTIFY_ATTEMPTS": (1, 20),
    "NOTIFY_BUDGET": (1, 55),
    "NOTIFY_SPOOL_MAX": (1, 100000),
    "ALERT_REPEAT_INTERVAL": (0, 2592000),
    "ALERT_AFTER_RUNS": (1, 100),
}
# The one URL rule of the webhook and the heartbeat URL (RULES.httpsUrl).
URL_RE: str = "^https://([A-Za-z0-9._~%!$&'()*+,;=:-]+@)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*[.]?|\\[[0-9A-Fa-f:.]+\\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*)?([?][A-Za-z0-9._~%!$&'()*+,;=:@/?-]*)?$"
# END settings table

# BEGIN file table grammar (generated from components/fileTable.ts by `npm run settings:gen`; do not edit)
PARTS: tuple[str, ...] = ("base", "monitors", "bantool", "web")
FILE_ROW_RE: str = "^[ \\t]*(base|monitors|bantool|web)[ \\t]+([A-Za-z0-9_][A-Za-z0-9_.-]*/)*[A-Za-z0-9_][A-Za-z0-9_.-]*[ \\t]+/((([A-Za-z0-9_-]|[.][A-Za-z0-9_-]|[.][.][A-Za-z0-9_.-])[A-Za-z0-9_.-]*)/)*(([A-Za-z0-9_-]|[.][A-Za-z0-9_-]|[.][.][A-Za-z0-9_.-])[A-Za-z0-9_.-]*)[ \\t]+0(755|644)[ \\t]*$"
FILE_SKIP_RE: str = "^[ \\t]*(#.*)?$"
FILE_ROW_ALLOWED: str = "a part of base, monitors, bantool, web; a relative source path (no segment starting with a dot, no *); an absolute destination file (no trailing /); mode 0755 or 0644"
# END file table grammar
