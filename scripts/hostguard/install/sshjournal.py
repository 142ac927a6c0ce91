"""fail2ban's own sshd jail on a host without /var/log/auth.log: it reads the systemd journal instead.

Part bantool places DROPIN (`[sshd] backend = systemd`, recorded like its other files) only when the root
is /, auth.log is absent, `fail2ban-client -t` fails on exactly that (fail2ban#3292: Debian 12 without
rsyslog) and fail2ban's interpreter can read the journal. DROPIN is the first jail.d/*.conf by name, so a
user's own [sshd] settings win. Nothing here turns a jail off.
"""

from __future__ import annotations

import glob
import os
import shutil

from .. import log
from . import services

DROPIN = "/etc/fail2ban/jail.d/00-hostguard-sshd-journal.conf"
AUTH_LOG = "/var/log/auth.log"
NO_LOG = "Have not found any log file for sshd jail"
JOURNALS = ("/run/log/journal/*/*.journal", "/var/log/journal/*/*.journal")
CONTENT = b"""\
# Placed by hostguard's install (part bantool) because this host has no
# /var/log/auth.log (Debian 12 without rsyslog), the file fail2ban's stock
# sshd jail reads: with it, fail2ban could not start. The sshd jail reads
# sshd's lines from the systemd journal instead. Your own [sshd] settings in
# jail.local or jail.d/*.local win over this file. `install uninstall --part
# bantool` (a stack's destroy) removes it.
[sshd]
backend = systemd
"""


def _interpreter() -> str:
    """fail2ban-server's interpreter (its #! line), which must import systemd.journal."""
    server = shutil.which("fail2ban-server")
    try:
        with open(server or "", "rb") as f:
            first = f.readline().decode("utf-8", "replace")
    except OSError:
        return "python3"
    words = first[2:].split() if first.startswith("#!") else []
    return words[-1] if words and words[0].endswith("/env") else (words[0] if words else "python3")


def journal_readable() -> bool:
    """A journal with files, and python3-systemd for fail2ban's interpreter."""
    if not any(glob.glob(pattern) for pattern in JOURNALS):
        return False
    return services.run_quiet(_interpreter(), "-c", "import systemd.journal")


def needed(root: str) -> bool:
    """Stock Debian 12 without rsyslog (see above): the drop-in makes the sshd jail work, and nothing else."""
    if root or os.path.lexists(AUTH_LOG) or shutil.which("fail2ban-client") is None:
        return False
    ok, out = services.fail2ban_test()
    if ok or NO_LOG not in out:
        return False
    if not journal_readable():
        log.warn(f"fail2ban's sshd jail has no {AUTH_LOG} and no journal it can read: not changed", err=False)
        return False
    log.warn(
        f"fail2ban's stock sshd jail reads {AUTH_LOG}, which this host does not have (no rsyslog), so"
        f" fail2ban could not start: placing {DROPIN} ([sshd] backend = systemd: the journal); your own"
        " [sshd] settings in jail.local or jail.d/*.local win over it; uninstall removes it",
        err=False,
    )
    return True
