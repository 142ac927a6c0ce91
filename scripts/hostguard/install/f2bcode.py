"""Which of hostguard's code the running fail2ban-server loaded, so that a deploy reaches it.

fail2ban keeps its actions' modules (the `hostguard` package) across a reload: only a new server process
runs new code. Install records the digest of those files when it starts or restarts fail2ban (RECORD,
root's, removed with part bantool), and restarts a running fail2ban instead of reloading it when the files
on disk differ from what it recorded (services.apply).
"""

from __future__ import annotations

import glob
import hashlib
import os

from .. import log, paths
from ..atomicfile import write_atomic

PACKAGE = "/usr/local/lib/hostguard/hostguard"
ACTIONS = ("/etc/fail2ban/action.d/slack-notify.py", "/etc/fail2ban/action.d/hostguard-nginx-ban.py")
RECORD = f"{paths.STATE_PATH}/fail2ban.code"


def digest() -> str:
    """SHA-256 over the package's modules and the two actions as they are on disk (an absent one counts)."""
    found = sorted(glob.glob(os.path.join(paths.under(PACKAGE), "**", "*.py"), recursive=True))
    names = [name[len(paths.ROOT) :] for name in found] + list(ACTIONS)
    total = hashlib.sha256()
    for name in names:
        try:
            with open(paths.under(name), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            data = b"\0absent"
        total.update(f"{name}\0{len(data)}\0".encode())
        total.update(data)
    return total.hexdigest()


def recorded() -> str | None:
    """The digest recorded when install last started or restarted fail2ban (None: none recorded)."""
    try:
        with open(paths.under(RECORD), encoding="ascii", errors="replace") as handle:
            return handle.read(100).strip() or None
    except FileNotFoundError:
        return None


def record(value: str) -> None:
    """Records VALUE; a failure is said, not raised: the next install restarts fail2ban once more."""
    try:
        write_atomic(paths.under(RECORD), f"{value}\n".encode())
    except OSError as error:
        log.warn(f"cannot write {RECORD} ({error.strerror}): the next install restarts fail2ban again")
