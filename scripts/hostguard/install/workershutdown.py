"""Part web's main-context drop-in with trustedProxies: old nginx workers end within a set time.

DROPIN (nginx's `worker_shutdown_timeout`, rendered by components/hostFiles.ts, a row of files.table) is
placed only when both hold (`wanted`), else install says why and goes on:
- NGINX_CONF includes modules-enabled/*.conf (else a warning naming the file and the line to add);
- no `worker_shutdown_timeout` of the user's (`nginx -T` on the live root, and NGINX_CONF and the other
  modules-enabled/*.conf files).
Recorded like the part's other files; part web's `nginx -t` before the reload rolls a failure back.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Callable

from .. import log
from . import services

DROPIN = "/etc/nginx/modules-enabled/hostguard-worker-shutdown.conf"
NGINX_CONF = "/etc/nginx/nginx.conf"
INCLUDE = "include /etc/nginx/modules-enabled/*.conf;"
DIRECTIVE = "worker_shutdown_timeout"
_INCLUDE_RE = re.compile(r"^\s*include\s+/etc/nginx/modules-enabled/\*\.conf\s*;", re.MULTILINE)
_DIRECTIVE_RE = re.compile(r"^[^#\n]*\bworker_shutdown_timeout\b", re.MULTILINE)
_FILE_RE = re.compile(r"^# configuration file (\S+):$", re.MULTILINE)
# The directive's value as components/hostFiles.ts renders it (said in the warning).
SECONDS = 30


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _dump() -> str:
    """`nginx -T` on the live root ("" when it fails: the files are read instead)."""
    if shutil.which("nginx") is None:
        return ""
    try:
        done = subprocess.run(
            ["nginx", "-T", "-q"], capture_output=True, timeout=services.TIMEOUT, close_fds=True, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def users_file(root: str, host: Callable[[str], str]) -> str:
    """The file of the user's own worker_shutdown_timeout, or ""."""
    if not root:
        parts = _FILE_RE.split(_dump())  # before the first file, then each file's name and text
        for n in range(1, len(parts) - 1, 2):
            if parts[n] != DROPIN and _DIRECTIVE_RE.search(parts[n + 1]):
                return str(parts[n])
    enabled = sorted(glob.glob(host(os.path.dirname(DROPIN)) + "/*.conf"))
    for name in [NGINX_CONF] + [f"{os.path.dirname(DROPIN)}/{os.path.basename(p)}" for p in enabled]:
        if name != DROPIN and _DIRECTIVE_RE.search(_read(host(name))):
            return str(name)
    return ""


def wanted(root: str, host: Callable[[str], str]) -> bool:
    """DROPIN can be placed: NGINX_CONF includes modules-enabled/ and sets no worker_shutdown_timeout of its own."""
    conf = _read(host(NGINX_CONF))
    if not _INCLUDE_RE.search(conf):
        log.warn(
            f"{NGINX_CONF} does not include /etc/nginx/modules-enabled/*.conf in its main context, so {DROPIN}"
            f" (`{DIRECTIVE} {SECONDS}s;`) is not placed and old nginx workers may live on after each ban's reload"
            f" while a client holds a connection: add `{INCLUDE}` at the top of {NGINX_CONF} (as Debian's stock"
            f" file has it), or set `{DIRECTIVE} {SECONDS}s;` there yourself, then run the install again",
            err=False,
        )
        return False
    mine = users_file(root, host)
    if mine:
        log.info(f"{DIRECTIVE} is set in {mine}: yours is kept, {DROPIN} not placed")
        return False
    return True
