"""nginx's ban list for the nginx-bad-request jail (with trustedProxies).

A client behind a load balancer cannot be stopped by the firewall (its
packets come from the balancer), so its ban must reach nginx: this keeps one
`ADDRESS 1;` line per banned address in /var/lib/hostguard/nginx-bans.map,
which the `map` of part web's drop-in (/etc/nginx/conf.d/hostguard-realip.conf)
reads, and reloads nginx. `BanList` is used by the fail2ban Python action
hostguard-nginx-ban (fail2ban/action.d/hostguard-nginx-ban.py), inside
fail2ban's process, modelled on fail2ban's own nginx-block-map action.

An address is checked with `ipaddress` when fail2ban bans it (a refusal
raises: fail2ban's log says so), so the list never holds what nginx could
not read. The map matches `$remote_addr` exactly, so a network fail2ban bans
(`192.0.2.0/24`) or a scoped address cannot be listed: refused, and the ban
holds at the firewall only. A ban never waits for nginx: it is queued, and
one writer thread applies what was queued since its last pass as one list
write, one `nginx -t` and one reload, so a burst of bans costs a few
reloads, not one each. Fail safe and bounded: the list is root's, replaced
atomically under a lock on the state directory (waited for at most 10 s);
nginx is reloaded (SIGHUP to its master: graceful) only after `nginx -t`
passed within 20 s; a failure is logged to fail2ban's log and the firewall
ban of the same jail is not affected.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import signal
import subprocess
import threading
import time

from . import paths
from .atomicfile import lock_within, write_atomic
from .errors import HostguardError

LIST_NAME = "nginx-bans.map"
TMP_NAME = f".{LIST_NAME}.tmp"
LOCK_WAIT = 10.0
TEST_TIMEOUT = 20.0
# A ban waits this long in the queue, so that the rest of a burst goes in the same write and reload.
COALESCE = 0.2
# A failed pass (nginx -t failing, the lock held) is tried again this many times, a pass apart.
RETRIES = 3
LIST_HEADER = "# hostguard: addresses the nginx-bad-request jail bans (its hostguard-nginx-ban action keeps this file)"


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
    if lock_within(fd, LOCK_WAIT, 0.05):
        return state, fd
    os.close(fd)
    raise Refused(f"another run held {paths.STATE_PATH} for over {int(LOCK_WAIT)} s: the ban list is unchanged")


def apply(changes: dict[str, bool] | None, pid_file: str, nginx_opts: list[str]) -> None:
    """Applies CHANGES (entry: banned or not; None: empty the list) in one write and one reload, under the lock."""
    state, fd = locked_state()
    try:
        listed = read_list(state)
        if changes is None:
            wanted: list[str] = []
        else:
            wanted = [item for item in listed if changes.get(item, True)]
            wanted += [item for item, banned in changes.items() if banned and item not in wanted]
        if wanted != listed:
            write_list(state, wanted)
            added = len([item for item in wanted if item not in listed])
            removed = len(listed) + added - len(wanted)
            reload_nginx(f"the ban list ({added} added, {removed} removed)", pid_file, nginx_opts)
    finally:
        os.close(fd)


class BanList:
    """nginx's ban list kept from inside fail2ban's process (the Python action hostguard-nginx-ban).

    `ban` and `unban` check the address (Refused raises) and queue the change;
    one writer thread waits COALESCE seconds, then applies everything queued
    meanwhile, and goes on while more comes. `clear` empties the list at once.
    Failures go to LOG (fail2ban's logger).
    """

    def __init__(self, pid_file: str, nginx_opts: list[str], log: logging.Logger) -> None:
        self.pid_file = pid_file
        self.nginx_opts = nginx_opts
        self.log = log
        self._lock = threading.Lock()
        self._changes: dict[str, bool] = {}
        self._writer: threading.Thread | None = None
        self._failures = 0

    def ban(self, ip: str) -> None:
        self._queue(entry(ip), True)

    def unban(self, ip: str) -> None:
        self._queue(entry(ip), False)

    def clear(self) -> None:
        """Empties the list now (start, stop, flush), dropping what was queued; a failure raises."""
        with self._lock:
            self._changes = {}
            writer = self._writer
        if writer is not None:
            writer.join(LOCK_WAIT + TEST_TIMEOUT + COALESCE + 1)
        apply(None, self.pid_file, self.nginx_opts)

    def _queue(self, item: str, banned: bool) -> None:
        with self._lock:
            self._changes[item] = banned
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_all, name="hostguard-nginx-ban", daemon=True)
                self._writer.start()

    def _write_all(self) -> None:
        try:
            while True:
                time.sleep(COALESCE)
                with self._lock:
                    changes, self._changes = self._changes, {}
                    if not changes:
                        self._writer = None  # under the lock: a change queued after this starts a new writer
                        return
                try:
                    apply(changes, self.pid_file, self.nginx_opts)
                except Exception as error:  # the writer must go on whatever failed: later bans depend on it
                    self.log.error(
                        "hostguard-nginx-ban: %s", error if isinstance(error, HostguardError) else repr(error)
                    )
                    self._retry(changes)
        finally:
            with self._lock:
                if self._writer is threading.current_thread():
                    self._writer = None

    def _retry(self, changes: dict[str, bool]) -> None:
        """Queues a failed pass's changes again, under newer ones, at most RETRIES times in a row."""
        self._failures += 1
        if self._failures > RETRIES:
            self.log.error("hostguard-nginx-ban: %d change(s) given up after %d failed passes", len(changes), RETRIES)
            self._failures = 0
            return
        with self._lock:
            self._changes = {**changes, **self._changes}
