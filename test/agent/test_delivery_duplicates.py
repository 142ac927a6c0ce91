"""Duplicates (issue 43 item 10): a service that takes a post at once but answers after NOTIFY_MAX_TIME gets
one copy per attempt, as the README's "An alert arrived twice" says (scripts/README.md said it got one)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hostguard import settings
from hostguard.notify import delivery, urlfile
from hostguard.notify.spool import ALERTS, Spool


class SlowService:
    """A TLS service on loopback that reads each request whole, counts it, and answers after DELAY seconds."""

    def __init__(self, tmp: Path, delay: float) -> None:
        key, cert = tmp / "key.pem", tmp / "cert.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        self.cadata = cert.read_text()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cert), str(key))
        self.delay = delay
        self.requests = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self.listener.getsockname()[1]}/services/T0/B0/slow"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket) -> None:
        try:
            with self.context.wrap_socket(conn, server_side=True) as tls:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += tls.recv(65536)
                head, body = data.split(b"\r\n\r\n", 1)
                length = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                while len(body) < length:
                    body += tls.recv(65536)
                self.requests += 1
                time.sleep(self.delay)
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        except (OSError, ssl.SSLError, StopIteration):
            pass


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[SlowService]:
    service = SlowService(tmp_path, 2.5)
    yield service
    service.listener.close()


REPO = Path(__file__).resolve().parents[2]


def test_a_post_taken_but_answered_late_is_one_copy_per_attempt_as_the_readme_says(
    root: Path, monkeypatch: pytest.MonkeyPatch, slow: SlowService
) -> None:
    hook = urlfile.Hook(slow.url, "id", ssl.create_default_context(cadata=slow.cadata), "slack")
    monkeypatch.setattr(delivery, "load_hook", lambda _settings: hook)
    monkeypatch.setattr(delivery, "pace", lambda *_args: None)
    conf = settings.parse("NOTIFY_MAX_TIME=1\nNOTIFY_ATTEMPTS=2\n", "hostguard.conf")
    box = Spool(100)
    box.enqueue("[Server Alert] disk full", None, ALERTS)
    assert delivery.flush(conf, box) == 75
    time.sleep(0.2)
    assert slow.requests == 2, "one copy per attempt"
    assert box.pending() == 1, "kept: the next run sends it again"
    readme = " ".join((REPO / "README.md").read_text().split())
    ledger = " ".join((REPO / "scripts/README.md").read_text().split())
    assert "gave no answer within `NOTIFY_MAX_TIME`" in readme and "each further attempt" in readme
    assert "each further attempt, in that run and later ones, may be one more copy" in ledger
