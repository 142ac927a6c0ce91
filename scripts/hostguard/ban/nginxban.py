"""nginx's ban list for the nginx-bad-request jail (with trustedProxies): `BanList`, used by the
fail2ban Python action hostguard-nginx-ban inside fail2ban's process.

/var/lib/hostguard/nginx-bans.map holds one `ADDRESS 1;` line per spelling of each banned address
(an IPv4 address also as `::ffff:a.b.c.d`, the form a dual-stack proxy forwards), read by the `map`
of part web's drop-in (/etc/nginx/conf.d/hostguard-realip.conf). An address that is no single
address `$remote_addr` can equal (a network, a scoped one) is refused: that ban holds at the
firewall only. A ban never waits for nginx: one writer thread writes the whole list (root's,
replaced atomically under a lock waited for at most 10 s), runs `nginx -t` (20 s) and reloads
nginx, after COALESCE and at most once per RELOAD_GAP; a failed pass stays pending and is tried
again after 2, 4, 8 ... RETRY_MAX seconds. Failures go to fail2ban's log; the firewall ban is not
affected.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import subprocess
import threading
import time

from .. import paths
from ..atomicfile import lock_within, write_atomic
from ..errors import HostguardError

LIST_NAME = "nginx-bans.map"
TMP_NAME = f".{LIST_NAME}.tmp"
LOCK_WAIT = 10.0
TEST_TIMEOUT = 20.0
# A change waits this long, so that the rest of a burst goes in the same write and reload.
COALESCE = 0.2
# Passes (each at most one reload) start at least this far apart.
RELOAD_GAP = 2.0
# A failed pass is tried again after RELOAD_GAP, then twice as long each time, at most this.
RETRY_MAX = 16.0
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


def spellings(item: str) -> list[str]:
    """Every form in which nginx's $remote_addr can hold the client of ITEM (an entry)."""
    if item.startswith("::ffff:") and "." in item:
        return [item[len("::ffff:") :], item]
    if "." in item:
        return [item, f"::ffff:{item}"]
    return [item]


def write_list(state: str, entries: list[str]) -> None:
    """Replaces the list with ENTRIES, each in every spelling, once (atomically)."""
    lines = dict.fromkeys(form for item in entries for form in spellings(item))
    text = "".join(f"{form} 1;\n" for form in lines)
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


def apply(entries: list[str], pid_file: str, nginx_opts: list[str]) -> None:
    """Writes the whole list of ENTRIES and reloads nginx, under the lock; Refused when either failed."""
    state, fd = locked_state()
    try:
        write_list(state, entries)
        reload_nginx(f"the ban list ({len(entries)} address(es))", pid_file, nginx_opts)
    finally:
        os.close(fd)


class BanList:
    """nginx's ban list kept from inside fail2ban's process (the Python action hostguard-nginx-ban).

    `ban` and `unban` check the address (Refused raises) and change the set
    in memory; one writer thread applies the whole set when it changed
    (`_pass`), no sooner than COALESCE after the change and RELOAD_GAP after
    the previous pass, and tries a failed pass again until it succeeds.
    `clear` empties the list at once. Failures go to LOG (fail2ban's logger).
    """

    def __init__(self, pid_file: str, nginx_opts: list[str], log: logging.Logger) -> None:
        self.pid_file = pid_file
        self.nginx_opts = nginx_opts
        self.log = log
        self._lock = threading.Lock()  # guards the fields below
        self._banned: dict[str, None] = {}  # in the order fail2ban banned them
        self._pending = False  # the set changed, or a pass failed, since the last pass that applied it
        self._writer: threading.Thread | None = None
        self._next = 0.0  # monotonic time before which no pass starts
        self._failures = 0
        self._applying = threading.Lock()  # one pass or clear at a time

    def ban(self, ip: str) -> None:
        item = entry(ip)
        with self._lock:
            self._banned[item] = None
            self._changed()

    def unban(self, ip: str) -> None:
        item = entry(ip)
        with self._lock:
            self._banned.pop(item, None)
            self._changed()

    def clear(self) -> None:
        """Empties the list now (start, stop, flush); a failure raises, and the writer tries it again."""
        with self._applying:
            with self._lock:
                self._banned = {}
                self._pending = False
            try:
                apply([], self.pid_file, self.nginx_opts)
            except Refused:
                with self._lock:
                    self._changed()
                raise

    def _changed(self) -> None:
        """Marks the list pending and starts the writer when none runs (called holding _lock)."""
        self._pending = True
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_all, name="hostguard-nginx-ban", daemon=True)
            self._writer.start()

    def _write_all(self) -> None:
        try:
            while True:
                time.sleep(max(COALESCE, self._next - time.monotonic()))
                with self._lock:
                    if not self._pending:
                        self._writer = None  # under the lock: a change after this starts a new writer
                        return
                self._pass()
        finally:
            with self._lock:
                if self._writer is threading.current_thread():
                    self._writer = None

    def _pass(self) -> None:
        """Applies the whole set once; on a failure the list stays pending, tried again later."""
        with self._applying:
            with self._lock:
                wanted, self._pending = list(self._banned), False
            try:
                apply(wanted, self.pid_file, self.nginx_opts)
            except Exception as error:  # the writer must go on whatever failed: later bans depend on it
                with self._lock:
                    self._pending = True
                self._failures += 1
                delay = min(RETRY_MAX, RELOAD_GAP * 2 ** min(self._failures - 1, 8))
                # The first failures, then one in each doubling: a broken nginx -t does not flood the log.
                if self._failures & (self._failures - 1) == 0:
                    text = error if isinstance(error, HostguardError) else repr(error)
                    self.log.error(
                        "hostguard-nginx-ban: %s (failed pass %d; tried again in %d s until it succeeds)",
                        text,
                        self._failures,
                        delay,
                    )
                self._next = time.monotonic() + delay
                return
            if self._failures:
                self.log.warning("hostguard-nginx-ban: the ban list applied after %d failed pass(es)", self._failures)
            self._failures = 0
            self._next = time.monotonic() + RELOAD_GAP
