"""The services a part's change reaches: nginx and fail2ban tested and reloaded (services.py) when the part
changed their files, fail2ban restarted when the hostguard code it loaded is not what is on disk."""

from __future__ import annotations

from . import f2bcode, services
from .txn import Txn

SERVICE = {"bantool": "fail2ban", "web": "nginx"}


def apply(t: Txn, part: str, undoing: bool = False) -> None:
    if t.changed and part in SERVICE:
        services.apply(SERVICE[part], t.root, undoing)
    elif not undoing and not t.root and code_moved(part):
        services.apply("fail2ban", t.root)  # restarts it: the code it runs is not what is installed


def code_moved(part: str) -> bool:
    """hostguard's code on disk is not what fail2ban-server loaded (f2bcode.py): after part bantool,
    or after part base once install started fail2ban with its actions."""
    if part not in ("base", "bantool") or not services.run_quiet("fail2ban-client", "ping"):
        return False
    loaded = f2bcode.recorded()
    return (part == "bantool" or loaded is not None) and loaded != f2bcode.digest()
