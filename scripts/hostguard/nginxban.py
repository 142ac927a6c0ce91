"""hostguard-nginx-ban: nginx's ban list for the nginx-bad-request jail (with trustedProxies).

A client behind a load balancer cannot be stopped by the firewall (its
packets come from the balancer), so its ban must reach nginx: this keeps one
`ADDRESS 1;` line per banned address in
/var/lib/hostguard/nginx-bans.map, which the `map` of part web's
drop-in (/etc/nginx/conf.d/hostguard-realip.conf) reads, and reloads nginx.
Run by the fail2ban action hostguard-nginx-ban (modelled on fail2ban's own
nginx-block-map action), as root:

    hostguard-nginx-ban [--pid FILE] [--nginx-opts WORDS] ban IP | unban IP | flush

IP is checked with `ipaddress` before it is written, so the list never
holds what nginx could not read. The map matches `$remote_addr` exactly, so
a network fail2ban bans (`192.0.2.0/24`) cannot be listed: that ban is
refused here, said in fail2ban's log, and holds at the firewall only. Fail safe and bounded: the list
is root's, replaced atomically (temp file in the same directory, fsync,
rename, fsync of the directory) under a lock on the state directory (waited
for at most 10 s); nginx is reloaded (SIGHUP to its master: graceful) only
after `nginx -t` passed within 20 s. Anything that stops the ban reaching
nginx is one line on stderr and exit 1, which fail2ban writes to its log;
the firewall ban of the same jail is not affected.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import signal
import subprocess
import sys
import time

from . import paths
from .atomicfile import write_atomic
from .errors import EX_USAGE, HostguardError

LIST_NAME = "nginx-bans.map"
TMP_NAME = f".{LIST_NAME}.tmp"
LOCK_WAIT = 10.0
TEST_TIMEOUT = 20.0
LIST_HEADER = (
    "# hostguard: addresses the nginx-bad-request jail bans (hostguard-nginx-ban keeps this file; do not edit)"
)
USAGE = "usage: hostguard-nginx-ban [--pid FILE] [--nginx-opts WORDS] ban IP | unban IP | flush\n"


class Refused(HostguardError):
    """The ban list or nginx could not be brought up to date (exit 1, said on stderr)."""


def entry(text: str) -> str:
    """The list's spelling of fail2ban's <ip> (an address; /32 and /128 are one too); else Refused."""
    try:
        # A scope (fe80::1%eth0) names a link, not a client: nginx's $remote_addr never holds one.
        if not text.isascii() or "%" in text:
            raise ValueError(text)
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise Refused(f"refused '{text[:64]}': not an IP address; the ban list is unchanged") from None
    if network.num_addresses != 1:
        raise Refused(
            f"refused {network}: nginx's ban list matches single addresses, so this network ban holds at the"
            " firewall only; the ban list is unchanged"
        )
    address = network.network_address
    # nginx writes an IPv4-mapped client as ::ffff:192.0.2.2 (Python: ::ffff:c000:202); the map matches text.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"
    return str(address)


def read_list(state: str) -> list[str]:
    """The entries now in the list, in order (lines it did not write are dropped)."""
    try:
        fd = os.open(os.path.join(state, LIST_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
        lines = handle.read(64 << 20).splitlines()
    found: list[str] = []
    for line in lines:
        address, _, value = line.partition(" ")
        if value == "1;":
            with contextlib.suppress(Refused):
                found.append(entry(address))
    return found


def write_list(state: str, entries: list[str]) -> None:
    """Replaces the list with ENTRIES (atomically)."""
    text = "".join(f"{item} 1;\n" for item in entries)
    try:
        data = (LIST_HEADER + "\n" + text).encode("utf-8")
        write_atomic(os.path.join(state, LIST_NAME), data, os.path.join(state, TMP_NAME))
    except OSError as error:
        raise Refused(
            f"cannot write {paths.STATE_PATH}/{LIST_NAME}: {error.strerror}; the ban list is unchanged"
        ) from None


def master_pid(pid_file: str) -> int | None:
    """nginx's running master from its pid file, or None (not running: the list applies when it starts)."""
    try:
        with open(pid_file, encoding="ascii", errors="replace") as handle:
            text = handle.read(32).strip()
        if not text.isdigit() or text.startswith("0"):
            return None
        with open(f"/proc/{text}/comm", encoding="utf-8", errors="replace") as handle:
            if handle.read().strip() != "nginx":
                return None
    except OSError:
        return None
    return int(text)


def reload_nginx(what: str, pid_file: str, nginx_opts: list[str]) -> None:
    """Tests nginx's configuration (bounded) and reloads it gracefully; WHAT names the change for a failure."""
    pid = master_pid(pid_file)
    if pid is None:
        return
    where = f"{paths.STATE_PATH}/{LIST_NAME}"
    try:
        test = subprocess.run(
            ["nginx", *nginx_opts, "-t", "-q"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TEST_TIMEOUT,
            check=False,
        )
        failed = test.returncode != 0
        out = (test.stdout + test.stderr).decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        failed, out = True, "timed out"
    except OSError as error:
        failed, out = True, error.strerror or "cannot run nginx"
    if failed:
        out = " ".join(out.split())[:400]
        raise Refused(
            f"{what} is in {where}, but nginx was NOT reloaded, so it still refuses only the previous list:"
            f" nginx -t failed or took over {int(TEST_TIMEOUT)} s: {out}"
        )
    try:
        os.kill(pid, signal.SIGHUP)
    except OSError:
        raise Refused(f"{what} is in {where}, but nginx (pid {pid}) could not be signalled to reload") from None


def locked_state() -> tuple[str, int]:
    """The state directory and a descriptor of it holding its lock (waited for at most LOCK_WAIT)."""
    state = paths.under(paths.STATE_PATH)
    try:
        fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        raise Refused(f"{paths.STATE_PATH} is missing (part base not installed): the ban cannot reach nginx") from None
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return state, fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise Refused(
                    f"another run held {paths.STATE_PATH} for over {int(LOCK_WAIT)} s: the ban list is unchanged"
                ) from None
            time.sleep(0.05)


def apply(command: str, target: str | None, pid_file: str, nginx_opts: list[str]) -> None:
    """ban, unban or flush, under the lock."""
    item = entry(target) if target is not None else None
    state, fd = locked_state()
    try:
        listed = read_list(state)
        if command == "ban" and item is not None:
            if item not in listed:
                write_list(state, [*listed, item])
            reload_nginx(f"ban of {item}", pid_file, nginx_opts)
        elif command == "unban" and item is not None:
            if item in listed:
                write_list(state, [x for x in listed if x != item])
                reload_nginx(f"unban of {item}", pid_file, nginx_opts)
        elif listed:
            write_list(state, [])
            reload_nginx("the emptied list", pid_file, nginx_opts)
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    os.umask(0o077)
    pid_file, nginx_opts = "/run/nginx.pid", []
    while len(argv) >= 2 and argv[0] in ("--pid", "--nginx-opts"):
        if argv[0] == "--pid":
            pid_file = argv[1]
        else:
            nginx_opts = argv[1].split()
        argv = argv[2:]
    shapes = {"ban": 2, "unban": 2, "flush": 1}
    if not argv or shapes.get(argv[0]) != len(argv):
        sys.stderr.write(USAGE)
        return EX_USAGE
    try:
        if os.geteuid() != 0:
            raise Refused("must run as root (the list is root's)")
        apply(argv[0], argv[1] if len(argv) == 2 else None, pid_file, nginx_opts)
    except HostguardError as error:
        sys.stderr.write(f"hostguard-nginx-ban: {error}\n")
        return error.code
    return 0
