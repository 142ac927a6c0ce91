"""One HTTPS exchange with the chat service (or the heartbeat), and the kinds
of answer the queue knows (answers.py sorts each format's answers into them).

HTTPS only, the certificate verified (against NOTIFY_CA_FILE when set), no
redirect followed, the whole exchange within one deadline. The kinds:

- delivered: any 2xx;
- transient: no answer (refused, reset, timed out, TLS), 408, 429, 5xx and
  anything else not 4xx, with the Retry-After the service asked for;
- webhook: the webhook itself is refused (Slack's 403 invalid_token, ...):
  the webhook, not the message, is at fault: keep everything;
- channel: 404 channel_not_found on a message with a channel: re-send
  without it;
- message: any other 4xx: this message is refused for good (dead letter).

Error texts are the service's body redacted, then cut to 200 bytes, printable
ASCII only; reasons for a failed connection never quote the exception (it may
name the host).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, NamedTuple

from ..redact import redact

if TYPE_CHECKING:
    import io
    import socket
    import ssl
    from urllib.parse import SplitResult

DELIVERED = "delivered"
TRANSIENT = "transient"
MESSAGE = "message"  # refused for good: dead letter
CHANNEL = "channel"  # 404 channel_not_found on a channel override
WEBHOOK = "webhook"  # the webhook itself is refused

ERROR_MAX = 200
BODY_MAX = 65536
_HTTP_DATE = re.compile(r"[A-Za-z]{3}, [0-9]{2} [A-Za-z]{3} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT")


class Answer(NamedTuple):
    """What one post came to."""

    kind: str
    reason: str
    status: int = 0
    body: str = ""
    retry_after: float | None = None


def error_text(body: str) -> str:
    """BODY fit for a log line: redacted, then cut to ERROR_MAX bytes (no piece of a secret left), printable ASCII."""
    raw = redact(body).encode("utf-8", "surrogateescape")[:ERROR_MAX]
    return "".join(chr(byte) if 0x20 <= byte < 0x7F else "?" for byte in raw)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After VALUE asks for: decimal seconds (09 is nine) or an HTTP date; None when neither."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit() and len(value) <= 9:
        return float(int(value, 10))
    if _HTTP_DATE.fullmatch(value):
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, OverflowError):
            return None
        current = time.time() if now is None else now
        return float(max(0, int(when) - int(current)))
    return None


def failure(reason: str) -> Answer:
    """A post that got no HTTP answer: transient."""
    return Answer(TRANSIENT, reason)


class Reply(NamedTuple):
    """An HTTP answer: its status, its Retry-After header, its body (BODY_MAX at most)."""

    status: int
    retry_after: str | None
    body: str


def exchange(
    method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float, cadata: str | bytes | None
) -> Reply | str:
    """One HTTPS request (the certificate verified against CADATA, else the system's CAs; no redirect
    followed), the whole exchange within TIMEOUT seconds; the reply, or why there is none (never
    quoting an exception: it may name the host). The one HTTP client of the chat post and the heartbeat."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return "protocol refused (https only)"
    try:
        context = prepare(cadata)
    except (OSError, ValueError):
        return "cannot read the CA file"
    deadline = time.monotonic() + timeout
    return _exchange(method, parts, body, {**headers, **_credentials(parts)}, context, deadline)


_contexts: dict[str | bytes | None, ssl.SSLContext] = {}


def prepare(cadata: str | bytes | None) -> ssl.SSLContext:
    """The TLS context for CADATA (None: the system's CAs), made once per process.

    Called before a post is stamped for pacing, so that importing ssl and
    loading the CAs (tens of milliseconds) is not taken from the pace.
    """
    context = _contexts.get(cadata)
    if context is None:
        import ssl

        # Verification on, host name checked; no cadata: the system's CAs.
        context = ssl.create_default_context(cadata=cadata)
        _contexts[cadata] = context
    import http.client  # noqa: F401 - imported here for the same reason

    return context


def _credentials(parts: SplitResult) -> dict[str, str]:
    """As curl sends a URL's user:password: basic authentication."""
    if parts.username is None:
        return {}
    import base64
    from urllib.parse import unquote

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
    import http.client
    import socket
    import ssl

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
    import errno

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
        import io

        sock, deadline = self.sock, self.deadline

        class Reader(io.RawIOBase):
            def readable(self) -> bool:
                return True

            def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
                import socket

                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout("timed out")
                sock.settimeout(left)
                return sock.recv_into(buffer)

        return io.BufferedReader(Reader())
