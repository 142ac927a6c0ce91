"""hostguard's own places on the host, each spelled once.

`*_PATH` is the path as on the host (what install records in its manifests);
`under(path)` is the same under HOSTGUARD_ROOT, which only tests set (they run
the programs in a temporary root).
"""

import os

ROOT = os.environ.get("HOSTGUARD_ROOT", "")

LIB_PATH = "/usr/local/lib/hostguard"
CONF_PATH = "/etc/hostguard"
SETTINGS_PATH = CONF_PATH + "/hostguard.conf"
WEBHOOK_PATH = CONF_PATH + "/webhook.curlrc"
HEARTBEAT_PATH = CONF_PATH + "/heartbeat.curlrc"
STATE_PATH = "/var/lib/hostguard"
SPOOL_PATH = "/var/spool/hostguard"
LOG_PATH = "/var/log/hostguard"


def under(path: str) -> str:
    """PATH as the programs open it: under HOSTGUARD_ROOT in tests, as is on a host."""
    return ROOT + path


# The spool's files (spool.py) that say, without opening the database, whether
# a delivery run has anything to do.
SPOOL_DB_NAME = "spool.db"
SPOOL_HINT_NAME = ".pending"
# The ban tool's intake and its wake file (events.py; scripts/ban-intake.sh writes them).
INTAKE_NAME = "ban.intake"
WAKE_NAME = ".ban.wake"
# The bash notifier's message files (an upgrade's first flush imports them).
LEGACY_PREFIXES = ("msg-", ".sending-msg-", "dead-msg-")
# spool_may_hold_messages looks at the database itself in this part of every hour.
FULL_LOOK_EVERY = 3600
FULL_LOOK_FOR = 600


def spool_may_hold_messages(directory: "str | None" = None, now: "float | None" = None) -> bool:
    """Whether a delivery run has anything to do, from the spool directory's
    names alone: a quiet monitor run must not pay for SQLite (see spool.py)."""
    import time

    directory = directory if directory is not None else under(SPOOL_PATH)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if SPOOL_HINT_NAME in names or any(name.startswith(LEGACY_PREFIXES) for name in names):
        return True
    if (WAKE_NAME in names or INTAKE_NAME in names) and intake_waiting(directory):
        return True
    moment = time.time() if now is None else now
    return SPOOL_DB_NAME in names and int(moment) % FULL_LOOK_EVERY < FULL_LOOK_FOR


def intake_waiting(directory: str) -> bool:
    """Whether the ban tool's intake in DIRECTORY holds a record or its wake file waits for a run (two stats)."""
    try:
        if os.stat(os.path.join(directory, INTAKE_NAME)).st_size > 0:
            return True
    except FileNotFoundError:
        pass
    except OSError:
        return True
    return os.path.lexists(os.path.join(directory, WAKE_NAME))
