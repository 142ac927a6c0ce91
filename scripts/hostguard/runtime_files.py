"""The files hostguard's programs write while running, per part: the one table uninstall removes them by.

Each row: part, kind, path on the host (a glob in its last name only), the
program that writes it. `state` files are removed; a `message` file is the
spool database: uninstall counts its undelivered messages (a read-only query,
install/parts.py) before it removes it, and says how many went. The database
comes after its -wal and -shm files here: uninstall removes in reverse order,
so it counts first. Every path is in hostguard's root-only state or spool
directory. test/agent/test_runtime_files.py runs each program and checks
that what it wrote is listed here for its part.
"""

from __future__ import annotations

from .paths import SPOOL_PATH, STATE_PATH


def _alerts(name: str) -> list[tuple[str, str]]:
    return [("state", f"{STATE_PATH}/{name}.alerts"), ("state", f"{STATE_PATH}/.{name}.alerts.tmp")]


TABLE: dict[str, list[tuple[str, str]]] = {
    # hostguard-notify and the ban tool's action (delivery; a database set aside).
    "base": [
        *[("state", f"{SPOOL_PATH}/{name}") for name in (".lock", ".flush.log", ".reserve", ".reserve.tmp")],
        ("state", f"{SPOOL_PATH}/spool.db.bad-*"),
        ("state", f"{SPOOL_PATH}/spool.db-wal"),
        ("state", f"{SPOOL_PATH}/spool.db-shm"),
        ("message", f"{SPOOL_PATH}/spool.db"),
        # ssmstep.py (delivery ssm): what the State Manager step applied last.
        *[("state", f"{STATE_PATH}/fleet.applied{tail}") for tail in ("", ".tmp")],
    ],
    # host-monitor, container-monitor.
    "monitors": [
        *[("state", f"{STATE_PATH}/{name}") for name in ("cpu.sample", "host-monitor.lock", "host-monitor.df-pid")],
        *_alerts("host-monitor"),
        *[("state", f"{STATE_PATH}/{name}") for name in ("containers.running", ".containers.running.tmp")],
        *[("state", f"{STATE_PATH}/container-monitor.{tail}") for tail in ("lock", "stuck")],
        *_alerts("container-monitor"),
    ],
    # hostguard-nginx-ban (with trustedProxies); install: the code fail2ban runs (f2bcode.py).
    "bantool": [
        *[("state", f"{STATE_PATH}/{name}") for name in ("nginx-bans.map", ".nginx-bans.map.tmp")],
        *[("state", f"{STATE_PATH}/{name}") for name in ("fail2ban.code", ".fail2ban.code.tmp")],
    ],
    "web": [],
}
