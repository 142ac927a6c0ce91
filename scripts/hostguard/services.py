"""Service tests and reloads of install: only on the live root and when the tool is installed.

`nginx -t` / `fail2ban-client -t` always before a reload; a failed test fails
the part (install rolls it back). Every call is bounded in time, and none
gets a descriptor of the installer's (the install lock stays root's run's:
a fail2ban server this starts lives on without it). `apply`: test, then
reload (or start fail2ban); `reload_if_running`: set-webhook's (the action
reads the new file).
"""

from __future__ import annotations

import os
import shutil
import subprocess

from . import log
from .errors import HostguardError

TIMEOUT = 120
_TOOL = {"nginx": "nginx", "fail2ban": "fail2ban-client"}


def _run(*argv: str, quiet: bool = False) -> bool:
    """True when ARGV exits 0 within TIMEOUT; its output goes to the installer's, unless QUIET."""
    out = subprocess.DEVNULL if quiet else None
    try:
        return (
            subprocess.run(argv, stdout=out, stderr=out, timeout=TIMEOUT, close_fds=True, check=False).returncode == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def allowed(tool: str, root: str) -> bool:
    """Service operations run only on the live root, with the tool installed; says why not."""
    if root:
        log.info(f"root is {root}, not /: {tool} not tested or reloaded")
        return False
    if shutil.which(tool) is None:
        log.warn(f"{tool} is not installed: not tested or reloaded", err=False)
        return False
    return True


def _systemd() -> bool:
    return os.path.isdir("/run/systemd/system")


def _nginx_running() -> bool:
    try:
        with open("/run/nginx.pid") as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _fail2ban_running() -> bool:
    return _run("fail2ban-client", "ping", quiet=True)


def apply(service: str, root: str) -> None:
    """Tests SERVICE's configuration, then reloads it; HostguardError when the test fails."""
    tool = _TOOL[service]
    if not allowed(tool, root):
        return
    if service == "nginx":
        if not _run("nginx", "-t", "-q"):
            raise HostguardError("nginx -t failed")
        if _systemd() and _run("systemctl", "is-active", "--quiet", "nginx"):
            _run("systemctl", "reload", "nginx")
        elif _nginx_running():
            _run("nginx", "-s", "reload")
        else:
            log.info("nginx is not running: not reloaded")
        log.info("nginx configuration tested and reloaded")
        return
    if not _run("fail2ban-client", "-t", quiet=True):
        raise HostguardError("fail2ban-client -t failed")
    if _fail2ban_running():
        _run("fail2ban-client", "reload", quiet=True)
    elif _systemd():
        _run("systemctl", "start", "fail2ban")
    else:
        _run("fail2ban-client", "start", quiet=True)
    log.info("fail2ban configuration tested and reloaded")


def reload_if_running(root: str) -> None:
    """set-webhook: a running fail2ban reloads (its action reads the webhook file at start)."""
    if not allowed("fail2ban-client", root) or not _fail2ban_running():
        return
    if not _run("fail2ban-client", "-t", quiet=True):
        raise HostguardError("fail2ban-client -t failed")
    _run("fail2ban-client", "reload", quiet=True)
    log.info("fail2ban reloaded")
