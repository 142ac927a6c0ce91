"""The heartbeat: after a monitor run that completed and left the spool empty,
one HTTPS GET to the URL in heartbeat.curlrc, for a dead man's switch outside
(it notices a host, cron or notifier that stopped, which no alert can
report). No file, no heartbeat. The URL is a secret like the webhook (root's
0600 file, urlfile.py), never in argv, the environment or a log line. None is
sent while the other monitor's run is stuck: the service notices that too.
"""

from __future__ import annotations

import fcntl
import os
import time

from . import log, paths
from .settings import Settings

MONITORS = ("host-monitor", "container-monitor")


def lock_path(monitor: str) -> str:
    return paths.under(f"{paths.STATE_PATH}/{monitor}.lock")


def stuck_after(settings: Settings) -> int:
    """Seconds after which a run still holding its lock is stuck: the longest a
    run can take (three runtime calls, each ended by its timeout and a kill 5 s
    later, then a delivery run's budget) and a minute more."""
    return 3 * (settings.container_runtime_timeout + 5) + settings.notify_budget + 60


def lock_stuck(path: str, settings: Settings) -> int | None:
    """The start (epoch seconds: the run stamps the lock's mtime when it takes
    it) of a run that holds the lock PATH and is stuck; None otherwise. Never
    pass a lock this process holds (a second descriptor would see it held)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            pass
        since = int(os.fstat(fd).st_mtime)
    finally:
        os.close(fd)
    return since if int(time.time()) - since > stuck_after(settings) else None


def stamp(when: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))


def other_run_stuck(who: str, settings: Settings) -> bool:
    for other in MONITORS:
        if other == who:
            continue
        since = lock_stuck(lock_path(other), settings)
        if since is not None:
            log.warn(f"{who}: no heartbeat: a {other} run started at {stamp(since)} has not completed")
            return True
    return False


def ping(who: str, settings: Settings) -> None:
    """Requests the heartbeat URL once and logs the outcome (never the URL).
    Whatever happens the run goes on: a missed ping is what the service
    outside watches for."""
    file = paths.under(paths.HEARTBEAT_PATH)
    if not os.path.lexists(file):
        return
    from . import urlfile
    from .errors import ConfigError

    try:
        url = urlfile.read(file, "heartbeat").url
        urlfile.check_ca(settings.notify_ca_file)
        cadata = urlfile.read_ca(settings.notify_ca_file) if settings.notify_ca_file else None
    except ConfigError as error:
        log.error(f"{who}: {error}; no heartbeat sent")
        return
    except OSError as error:
        log.error(f"{who}: NOTIFY_CA_FILE {settings.notify_ca_file} cannot be read ({error}); no heartbeat sent")
        return
    if other_run_stuck(who, settings):
        return
    try:
        status = get(url, cadata, settings.notify_max_time)
    except Exception as error:  # whatever failed, the ping is missed and said so
        log.warn(f"{who}: heartbeat not sent: {reason(error)}")
        return
    if 200 <= status < 300:
        log.info(f"{who}: heartbeat sent (HTTP {status})")
    else:
        log.warn(f"{who}: heartbeat not accepted: HTTP {status}")


def reason(error: BaseException) -> str:
    name = type(error).__name__
    text = str(error)
    return f"{name}: {text}" if text else name


class _Deadline(Exception):
    pass


def get(url: str, cadata: str | bytes | None, seconds: float) -> int:
    """The HTTP status of one GET of URL (https only, certificate checked
    against CADATA or the system CAs, no redirect followed, body not read),
    the whole exchange bounded to SECONDS: a server that answers a byte at a
    time cannot hold the monitor."""
    import http.client
    import signal
    import ssl
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("not an https URL")
    context = ssl.create_default_context(cadata=cadata) if cadata else ssl.create_default_context()
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def expire(_signum: int, _frame: object) -> None:
        raise _Deadline(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=seconds, context=context)
    try:
        connection.request("GET", target, headers={"User-Agent": "hostguard-heartbeat"})
        return connection.getresponse().status
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        connection.close()
