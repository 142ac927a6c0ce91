"""Service tests and reloads of install: only on the live root and when the tool is installed.

`apply`: `nginx -t` / `fail2ban-client -t`, then reload (or start fail2ban; restart it when hostguard's code
it runs changed, f2bcode.py); a failed test fails the part (install rolls it back), after an uninstall it
only warns. `reload_if_running`: set-webhook's. A failed `fail2ban-client -t` prints fail2ban's own lines,
then what to do. Every call is bounded in time and gets no descriptor of the installer's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from .. import log
from ..errors import HostguardError
from . import f2bcode

TIMEOUT = 120
_TOOL = {"nginx": "nginx", "fail2ban": "fail2ban-client"}
# fail2ban's lines printed at most (the last ones: its errors come last).
F2B_LINES = 30
_NO_LOG_RE = re.compile(r"Have not found any log file for (\S+) jail")


def _run(*argv: str, quiet: bool = False) -> bool:
    """True when ARGV exits 0 within TIMEOUT; its output goes to the installer's, unless QUIET."""
    out = subprocess.DEVNULL if quiet else None
    try:
        return (
            subprocess.run(argv, stdout=out, stderr=out, timeout=TIMEOUT, close_fds=True, check=False).returncode == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_quiet(*argv: str) -> bool:
    """True when ARGV exits 0 within TIMEOUT, its output discarded."""
    return _run(*argv, quiet=True)


def fail2ban_test() -> tuple[bool, str]:
    """`fail2ban-client -t`: whether it passed, and what it printed (stdout and stderr)."""
    try:
        done = subprocess.run(("fail2ban-client", "-t"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=TIMEOUT, close_fds=True, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return False, f"fail2ban-client -t did not answer within {TIMEOUT} s"
    except OSError as exc:
        return False, f"fail2ban-client -t: {exc}"
    return done.returncode == 0, done.stdout.decode("utf-8", "replace")


def fail2ban_advice(out: str) -> str:
    """What to do about the failure fail2ban printed as OUT."""
    missing = _NO_LOG_RE.search(out)
    if missing:
        jail = missing.group(1)
        return (
            f"fail2ban's {jail} jail reads a log file this host does not have. In /etc/fail2ban/jail.local,"
            f" under [{jail}], set `backend = systemd` when {jail} logs to the journal (fail2ban needs"
            f" python3-systemd: apt install python3-systemd), or `logpath` to where it logs, or `enabled = false`"
            " to go without that jail; then run the install again"
        )
    return "fix what fail2ban names above in /etc/fail2ban (`fail2ban-client -t` checks it), then run the install again"


def _fail2ban_checked(undoing: bool) -> bool:
    """`fail2ban-client -t` passed; else fail2ban's own lines and what to do: HostguardError, or (UNDOING) a
    warning and False."""
    ok, out = fail2ban_test()
    if ok:
        return True
    for line in [x for x in out.splitlines() if x.strip()][-F2B_LINES:]:
        log.log("ERROR" if not undoing else "WARN", f"fail2ban-client -t: {line}", err=True)
    if undoing:
        log.warn(
            "fail2ban's configuration as it is now fails fail2ban's test (above): fail2ban not reloaded; it"
            " runs on with the jails it has until it stops, and will not start again until that is fixed: "
            + fail2ban_advice(out)
        )
        return False
    raise HostguardError(f"fail2ban-client -t failed (its lines above): {fail2ban_advice(out)}")


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


def _systemctl_or_client(verb: str) -> bool:
    """fail2ban started or restarted (VERB) by its service manager, or by fail2ban-client without one."""
    return _run("systemctl", verb, "fail2ban") if _systemd() else _run("fail2ban-client", verb, quiet=True)


_NOT_BACK = (
    ": fail2ban may not be running, so no address is banned; see `journalctl -u fail2ban` or"
    " /var/log/fail2ban.log, fix what it names, then run the install again"
)


def apply(service: str, root: str, undoing: bool = False) -> None:
    """Tests SERVICE's configuration, then reloads it; HostguardError when the test fails (fail2ban after
    an uninstall, UNDOING: a warning, and no reload)."""
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
    if not _fail2ban_checked(undoing):
        return
    code = f2bcode.digest()
    running = _fail2ban_running()
    if running and (undoing or f2bcode.recorded() == code):
        _run("fail2ban-client", "reload", quiet=True)
        log.info("fail2ban configuration tested and reloaded")
        return
    if undoing and not running:
        # The user stopped it: an uninstall leaves it stopped (its configuration was tested above).
        log.info("fail2ban is not running: not started")
        return
    if running:
        # A reload keeps hostguard's modules in fail2ban-server: only a new process runs the new code.
        if not _systemctl_or_client("restart"):
            # fail2ban ran before this restart: it may now be stopped, every ban lifted.
            raise HostguardError(f"fail2ban's restart failed (hostguard's code in it changed){_NOT_BACK}")
        log.info("fail2ban configuration tested and fail2ban restarted: hostguard's code in it changed")
    elif _systemctl_or_client("start"):
        log.info("fail2ban configuration tested and started")
    else:
        log.warn(f"fail2ban was not running and its start failed{_NOT_BACK}")
        return
    if not undoing:
        f2bcode.record(code)


def reload_if_running(root: str) -> None:
    """set-webhook: a running fail2ban reloads (its action reads the webhook file at start). A configuration
    that fails fail2ban's test is not reloaded and does not fail the webhook's step: part bantool's install
    (which places its own jail and, on a host without auth.log, the sshd drop-in) tests it and says why."""
    if not allowed("fail2ban-client", root) or not _fail2ban_running():
        return
    if not _fail2ban_checked(undoing=True):
        return
    _run("fail2ban-client", "reload", quiet=True)
    log.info("fail2ban reloaded")
