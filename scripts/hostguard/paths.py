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
WEBHOOK_PATH = CONF_PATH + "/webhook.conf"
# `install set-webhook --verify` writes the new webhook here (its temp name beside it: install/hostfs.temp_beside),
# `hostguard-notify --test --candidate` posts the connectivity test to it, and only then it is renamed in place.
WEBHOOK_CANDIDATE_PATH = CONF_PATH + "/.hostguard-tmp.webhook.conf"
HEARTBEAT_PATH = CONF_PATH + "/heartbeat.conf"
STATE_PATH = "/var/lib/hostguard"
SPOOL_PATH = "/var/spool/hostguard"
LOG_PATH = "/var/log/hostguard"


def under(path: str) -> str:
    """PATH as the programs open it: under HOSTGUARD_ROOT in tests, as is on a host."""
    return ROOT + path
