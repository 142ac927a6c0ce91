"""The heartbeat: after a monitor run that completed and left the spool empty,
one HTTPS GET to the URL in heartbeat.conf, for a dead man's switch outside
(it notices a host, cron or notifier that stopped, which no alert can
report). No file, no heartbeat. The URL is a secret like the webhook (root's
0600 file, loaded by urlfile.load), never in argv, the environment or a log line. None is
sent while the other monitor's run is stuck: the service notices that too.
"""

from __future__ import annotations

import os
import ssl

from .. import log, runlock
from ..errors import ConfigError
from ..settings import Settings
from . import chat, urlfile

MONITORS = ("host-monitor", "container-monitor")


def other_run_stuck(who: str, settings: Settings) -> bool:
    for other in MONITORS:
        if other == who:
            continue
        since = runlock.lock_stuck(runlock.lock_path(other), settings)
        if since is not None:
            log.warn(f"{who}: no heartbeat: a {other} run started at {runlock.stamp(since)} has not completed")
            return True
    return False


def ping(who: str, settings: Settings) -> None:
    """Requests the heartbeat URL once and logs the outcome (never the URL).
    Whatever happens the run goes on: a missed ping is what the service
    outside watches for."""
    if not os.path.lexists(urlfile.heartbeat_path()):
        return
    try:
        hook = urlfile.load(settings, "heartbeat")
    except ConfigError as error:
        log.error(f"{who}: {error}; no heartbeat sent")
        return
    if other_run_stuck(who, settings):
        return
    reply = get(hook.url, hook.context, settings.notify_max_time)
    if isinstance(reply, str):
        log.warn(f"{who}: heartbeat not sent: {reply}")
    elif 200 <= reply < 300:
        log.info(f"{who}: heartbeat sent (HTTP {reply})")
    else:
        log.warn(f"{who}: heartbeat not accepted: HTTP {reply}")


def get(url: str, context: ssl.SSLContext, seconds: float) -> int | str:
    """The HTTP status of one GET of URL within SECONDS (chat.exchange: https only, certificate checked,
    no redirect, one deadline for the whole exchange: a server that answers a byte at a time cannot hold
    the monitor), or why there is none."""
    reply = chat.exchange("GET", url, None, {"User-Agent": "hostguard-heartbeat"}, seconds, context)
    return reply if isinstance(reply, str) else reply.status
