"""One HTTPS exchange with the chat service (or the heartbeat): the answer as it came, or why there is none.

HTTPS only, the certificate verified by the context the URL file's loader made (NOTIFY_CA_FILE's
bundle, else the system's CAs), no redirect followed, the whole exchange within one deadline. A
reason for a failed connection never quotes the exception (it may name the host).
"""

from __future__ import annotations

import base64
import errno
import http.client
import io
import socket
import ssl
import time
from typing import NamedTuple
from urllib.parse import SplitResult, unquote, urlsplit

BODY_MAX = 65536


class Reply(NamedTuple):
    """An HTTP answer: its status, its Retry-After header, its body (BODY_MAX at most)."""

    status: int
    retry_after: str | None
    body: str


def exchange(
    method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float, context: ssl.SSLContext
) -> Reply | str:
    """One HTTPS request (the certificate verified by CONTEXT; no redirect followed), the whole exchange
    within TIMEOUT seconds; the reply, or why there is none. The one HTTP client of the chat post and the
    heartbeat."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return "protocol refused (https only)"
    deadline = time.monotonic() + timeout
    return _exchange(method, parts, body, {**headers, **_credentials(parts)}, context, deadline)


def _credentials(parts: SplitResult) -> dict[str, str]:
    """As curl sends a URL's user:password: basic authentication."""
    if parts.username is None:
        return {}
    user = unquote(parts.username) + ":" + unquote(parts.password or "")
    return {"Authorization": "Basic " + base64.b64encode(user.encode()).decode("ascii")}


def _exchange(
    method: str,
    parts: SplitResult,
    body: bytes | None,
    headers: dict[str, str],
    context: ssl.SSLContext,
    deadline: float,
) -> Reply | str:
    left = deadline - time.monotonic()
    if left <= 0:
        return "timed out"
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    connection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=left, context=context)
    try:
        try:
            connection.request(method, path, body, headers)
            sock = connection.sock
            assert sock is not None
            response = http.client.HTTPResponse(_DeadlineSocket(sock, deadline), method=method)  # type: ignore[arg-type]
            response.begin()
        except ssl.SSLCertVerificationError:
            return "server certificate not trusted"
        except (socket.timeout, TimeoutError):
            return "timed out"
        except ssl.SSLError:
            return "TLS handshake failed"
        except socket.gaierror:
            return "cannot resolve host"
        except (http.client.RemoteDisconnected, http.client.BadStatusLine):
            # Closed before a status line (RemoteDisconnected is also a ConnectionResetError).
            return "empty reply"
        except OSError as error:
            return _os_reason(error)
        except http.client.HTTPException:
            return "protocol error"
        retry_after = response.getheader("Retry-After")
        try:
            text = response.read(BODY_MAX).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            # Answered whatever happened after the status line: a post sent again would be a duplicate.
            text = ""
        return Reply(response.status, retry_after, text)
    finally:
        connection.close()


def _os_reason(error: OSError) -> str:
    if isinstance(error, ConnectionResetError) or error.errno in (errno.ECONNRESET, errno.EPIPE):
        return "connection reset"
    if isinstance(error, ConnectionRefusedError) or error.errno in (
        errno.ECONNREFUSED,
        errno.ENETUNREACH,
        errno.EHOSTUNREACH,
        errno.EADDRNOTAVAIL,
    ):
        return "connection refused or unreachable"
    if error.errno == errno.ETIMEDOUT:
        return "timed out"
    return "connection error"


class _DeadlineSocket:
    """The socket as HTTPResponse reads it: every read bounded by what is left of the deadline.

    A socket timeout alone bounds each read, so a server that sends one byte
    at a time could hold a run for ever; here the whole answer shares one.
    """

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline

    def makefile(self, mode: str) -> io.BufferedReader:
        sock, deadline = self.sock, self.deadline

        class Reader(io.RawIOBase):
            def readable(self) -> bool:
                return True

            def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout("timed out")
                sock.settimeout(left)
                return sock.recv_into(buffer)

        return io.BufferedReader(Reader())
