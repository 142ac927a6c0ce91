"""The programs each part of the payload needs on the host, with the Debian/Ubuntu package of each.

`check`: before install locks, recovers or writes anything, a missing program of a part asked for refuses
the run with one line per program (part, program, package; on stderr), nothing changed; warnings as log
lines. Uninstall checks nothing; the interpreter itself is the shim's (scripts/install). Programs are looked
up on the installer's PATH (an absolute CONTAINER_RUNTIME as is). `programs table` prints the tables.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import sys

from .. import log

# part(s), program (a,b: any one of them), package, what needs it. "*" is every
# part; "@runtime" is CONTAINER_RUNTIME (not needed when CONTAINER_MONITOR is
# false), "@banaction" the programs of the jail's banaction, "@python" the
# host agent's interpreter (the installer's shim checks it: 3.9 or later with sqlite3).
TABLE = [
    (
        "*",
        "@python",
        "python3",
        "the host agent (every chat message, the monitors, the heartbeat) and the installer (scripts/hostguard/)",
    ),
    ("monitors", "cron,crond", "cron", "the monitors' schedule (/etc/cron.d/hostguard)"),
    ("monitors", "@runtime", "-", "the container monitor (CONTAINER_RUNTIME)"),
    ("bantool", "fail2ban-client", "fail2ban", "the nginx-bad-request jail"),
    ("bantool", "@banaction", "-", "the jail's bans (its banaction)"),
    ("web", "nginx", "nginx", "the deny rule (nginx -t checks it before the reload)"),
]

# banaction (a glob), program, package; every matching row applies; "-": none needed.
BANACTION_PROGRAMS = [
    ("iptables*", "iptables", "iptables"),
    ("iptables*", "ip6tables", "iptables"),
    ("*ipset*", "ipset", "ipset"),
    ("nftables*", "nft", "nftables"),
    ("firewallcmd*", "firewall-cmd", "firewalld"),
    ("ufw", "ufw", "ufw"),
    ("shorewall*", "shorewall", "shorewall"),
    ("route", "ip", "iproute2"),
    ("hostsdeny", "-", "-"),
]

RUNTIME_PACKAGES = {"docker": "docker.io (or docker-ce from Docker's repository)", "podman": "podman"}
RUNTIME_WAY_OUT = (
    "or, on a host without containers, turn the container monitor off: pulumi config set"
    " hostguard:containerMonitor false (CONTAINER_MONITOR=false in the settings file)"
)
# The jail in the bundle (files.table's bantool row) and its section.
JAIL_SOURCE = "fail2ban/jail.d/hostguard-nginx-bad-request.local"
JAIL = "nginx-bad-request"
_SECTION = re.compile(r"\[([^]]*)\]")


def found(program: str) -> bool:
    """An executable file on PATH (a path as is); not `which`: a file that is not executable does not count."""
    if "/" in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    for folder in os.environ.get("PATH", "").split(":"):
        path = os.path.join(folder or ".", program)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return True
    return False


def _need(part: str, programs: str, package: str, why: str, otherwise: str = "") -> bool:
    if any(found(p) for p in programs.split(",")):
        return True
    sys.stderr.write(
        f"hostguard: part {part} needs {programs.replace(',', ' or ')} for {why}: not installed (not on PATH);"
        f" Debian/Ubuntu package: {package}{'; ' + otherwise if otherwise else ''}\n"
    )
    return False


def _ini_values(path: str, key: str) -> dict[str, str]:
    """The last value of KEY per section of fail2ban INI file PATH (`key = v` or `key: v`; # and ; comments)."""
    values: dict[str, str] = {}
    section = ""
    pattern = re.compile(re.escape(key) + r"\s*[=:]\s*(.*)")
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = _SECTION.match(line)
            if m:
                section = m.group(1)
                continue
            m = pattern.match(line)
            if m:
                values[section] = re.split(r"\s[#;]", m.group(1), maxsplit=1)[0].rstrip()
    return values


def banaction_name(root: str, bundle: str) -> str:
    """The banaction the jail will use: its own section's, else [DEFAULT]'s, each the last set in fail2ban's order."""
    d = f"{root}/etc/fail2ban"
    jail = f"{d}/jail.d/{JAIL_SOURCE.rsplit('/', 1)[1]}"
    ranked: list[tuple[int, str, str]] = []
    for rank, pattern in enumerate((f"{d}/jail.conf", f"{d}/jail.d/*.conf", f"{d}/jail.local", f"{d}/jail.d/*.local")):
        for path in sorted(glob.glob(pattern)):
            if path != jail and os.path.isfile(path):
                ranked.append((rank, path, path))
    own = os.path.join(bundle, JAIL_SOURCE)
    if os.path.isfile(own):
        # The bundle's jail sorts among jail.d/*.local under its installed name.
        ranked.append((3, jail, own))
    mine = default = ""
    for _, _, path in sorted(ranked):
        values = _ini_values(path, "banaction")
        mine = values.get(JAIL) or mine
        default = values.get("DEFAULT") or default
    return (mine or default).split("[", 1)[0]


def _banaction(part: str, why: str, root: str, bundle: str) -> bool:
    action = banaction_name(root, bundle)
    if not action or "%(" in action:
        log.warn(f"the jail's banaction is not set or not a plain name ({action or 'none'}): its firewall programs"
                 " are not checked", err=False)  # fmt: skip
        return True
    rows = [row for row in BANACTION_PROGRAMS if fnmatch.fnmatchcase(action, row[0])]
    if not rows:
        log.warn(f"banaction {action}: hostguard does not know its firewall programs; not checked", err=False)
    return all([_need(part, p, pkg, f"{why}: banaction {action}") for _, p, pkg in rows if p != "-"])


def _cron_running(root: str) -> None:
    """Only warned about, and only on the live root, where /proc is the host's."""
    if root:
        return
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            with open(comm) as f:
                if f.read().strip() in ("cron", "crond"):
                    return
        except OSError:
            continue
    log.warn(
        "cron is installed but not running: the monitors will not run until it is started (service cron start)",
        err=False,
    )


def check(parts: list[str], root: str, bundle: str, runtime: str, container_monitor: bool) -> int:
    """How many programs the PARTS need are missing (each named on stderr)."""
    missing = 0
    for part in parts:
        for where, programs, package, why in TABLE:
            if where != "*" and part not in where.split(","):
                continue
            if programs == "@python":
                continue  # the shim's (scripts/install)
            if programs == "@runtime":
                if not container_monitor:
                    continue
                name = runtime.rsplit("/", 1)[-1]
                pkg = RUNTIME_PACKAGES.get(name, f"the one that provides {name}")
                ok = _need(part, runtime, pkg, why, RUNTIME_WAY_OUT)
            elif programs == "@banaction":
                ok = _banaction(part, why, root, bundle)
            else:
                ok = _need(part, programs, package, why)
            missing += not ok
        if part == "monitors":
            _cron_running(root)
    return missing


def main(argv: list[str]) -> int:
    """`table`: the tables, one row a line (the README test reads them)."""
    for row in TABLE:
        print("|".join(row))
    for ban in BANACTION_PROGRAMS:
        print("ban|" + "|".join(ban))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
