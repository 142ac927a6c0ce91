"""The State Manager step (hostguard/fleet/ssmstep.py) against moto on loopback.

moto serves S3, SSM and the instance metadata (IMDSv2 token, the role's
credentials, the region); the step runs as the document runs it, its text on
python3's stdin with the four parameters as arguments, as root into a temp
root (`install --root`), with the real installer and a payload rendered by
the Pulumi program's renderer. What this cannot show: the SSM agent itself,
State Manager's scheduling, real KMS encryption (moto stores SecureStrings in
plain text) and IAM scoping of SSM (test/aws/fleet.test.ts proves the S3 side).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tarfile
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from hostguard.fleet import ssmstep

REPO = Path(__file__).resolve().parents[2]
STEP = REPO / "scripts" / "hostguard" / "fleet" / "ssmstep.py"
MOTO_VENV = Path(os.environ.get("HOSTGUARD_MOTO_VENV", Path.home() / ".cache" / "hostguard" / "moto-venv"))
BUCKET = "hostguard-test-bundles"
PARAMETER = "/hostguard/test/webhook"
URL_1 = "https://hooks.example.test/services/T0/B0/STEP-SECRET-ONE"
URL_2 = "https://hooks.example.test/services/T0/B0/STEP-SECRET-TWO"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    """moto_server on a free loopback port; its URL."""
    server = MOTO_VENV / "bin" / "moto_server"
    assert server.exists(), f"{server} is missing: source tools/setup.bash && hg_setup_moto"
    port = _free_port()
    proc = subprocess.Popen(
        [str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()  # noqa: S310 - loopback
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("moto_server did not answer within 30 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _creds() -> ssmstep.Creds:
    return ssmstep.Creds("testing", "testing", "", "us-east-1")


def _aws(
    moto: str, method: str, path: str, service: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    req = ssmstep.signed(method, f"{moto}{path}", service, _creds(), body, headers)
    with urllib.request.urlopen(req, timeout=10) as answer:  # noqa: S310 - loopback
        data: bytes = answer.read()
        return data


def _put_parameter(moto: str, value: str) -> int:
    body = json.dumps({"Name": PARAMETER, "Value": value, "Type": "SecureString", "Overwrite": True}).encode()
    headers = {"content-type": "application/x-amz-json-1.1", "x-amz-target": "AmazonSSM.PutParameter"}
    version: int = json.loads(_aws(moto, "POST", "/", "ssm", body, headers))["Version"]
    return version


@pytest.fixture(scope="module")
def bundle(moto: str, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A tar of the payload the renderer ships (containerMonitor false: no container runtime needed)."""
    payload = tmp_path_factory.mktemp("payload") / "p"
    subprocess.run(
        [
            "bash",
            "-c",
            f'source "{REPO}/test/helpers/render-payload.bash" && render_payload "$1" containerMonitor=false',
            "_",
            str(payload),
        ],
        check=True,
        timeout=300,
    )
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path in sorted(p for p in payload.rglob("*") if p.is_file()):
            tar.add(path, arcname=str(path.relative_to(payload)))
    data = out.getvalue()
    _aws(moto, "PUT", f"/{BUCKET}", "s3")
    return data


def _upload(moto: str, part: str, data: bytes, sha: str = "") -> str:
    sha = sha or hashlib.sha256(data).hexdigest()
    # urllib's default form content type would make moto read the body as a form.
    _aws(moto, "PUT", f"/{BUCKET}/bundles/{part}/{sha}.tar", "s3", data, {"content-type": "application/x-tar"})
    return f"{part}:{sha}"


def _step(moto: str, root: Path, bundles: str, version: int) -> subprocess.CompletedProcess[str]:
    """The step as the document runs it: its text on stdin, the four parameters as arguments."""
    env = {
        "PATH": os.environ["PATH"],
        "HOSTGUARD_IMDS": moto,
        "HOSTGUARD_AWS_ENDPOINT": moto,
        "HOSTGUARD_ROOT": str(root),
    }
    return subprocess.run(
        [sys.executable, "-I", "-", BUCKET, bundles, PARAMETER, str(version)],
        input=STEP.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def _listing(root: Path) -> list[str]:
    """Every installed file with mode, mtime and size; not what the notifier writes (it runs on a failure)."""
    skip = (
        "/var/spool/hostguard",
        "/var/log/hostguard",
        "/var/lib/hostguard/settings.valid",
    )
    return sorted(
        f"{p.relative_to(root)} {p.stat().st_mode:o} {p.stat().st_mtime_ns} {p.stat().st_size}"
        for p in root.rglob("*")
        if p.is_file()
        and not str(p.relative_to(root)).startswith(tuple(s.lstrip("/") for s in skip))
        and "__pycache__" not in p.parts  # the bytecode of each part's folder
    )


@pytest.fixture(scope="module")
def host(moto: str, bundle: bytes, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temp root after a first run: parts base and monitors, the webhook at version 1."""
    if os.geteuid() != 0:
        pytest.fail("the installer runs as root (the tests' sandboxes need it)")
    root = tmp_path_factory.mktemp("host")
    version = _put_parameter(moto, f"url={URL_1}\n")
    bundles = f"{_upload(moto, 'base', bundle)} {_upload(moto, 'monitors', bundle)}"
    done = _step(moto, root, bundles, version)
    assert done.returncode == 0, done.stdout + done.stderr
    assert URL_1 not in done.stdout + done.stderr
    assert "webhook version 1" in done.stdout
    return root


def test_first_run_installs_the_parts_and_the_webhook_only_in_the_root_only_file(host: Path) -> None:
    hook_file = host / "etc/hostguard/webhook.conf"
    assert hook_file.stat().st_mode & 0o777 == 0o600
    assert URL_1 in hook_file.read_text()
    assert (
        "root sh /usr/local/lib/hostguard/at-offset.sh /usr/local/lib/hostguard/host-monitor"
        in (host / "etc/cron.d/hostguard").read_text()
    )
    assert (host / "usr/local/lib/hostguard/install").exists()
    applied = (host / "var/lib/hostguard/fleet.applied").read_text().splitlines()
    assert [line.split(" ")[0] for line in applied] == ["base", "monitors", "webhook"]
    hits = [p for p in host.rglob("*") if p.is_file() and p != hook_file and URL_1.encode() in p.read_bytes()]
    assert hits == [], f"the webhook outside webhook.conf: {hits}"


def test_a_second_run_changes_nothing(moto: str, bundle: bytes, host: Path) -> None:
    before = _listing(host)
    sha = hashlib.sha256(bundle).hexdigest()
    done = _step(moto, host, f"base:{sha} monitors:{sha}", 1)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hostguard: nothing changed"
    assert _listing(host) == before


def test_a_tampered_object_is_refused_with_nothing_installed_and_the_failure_posted(
    moto: str, bundle: bytes, host: Path
) -> None:
    before = _listing(host)
    sha = hashlib.sha256(bundle).hexdigest()
    # Other bytes under a key naming a sha256 the host has not applied.
    wanted = hashlib.sha256(b"a newer payload").hexdigest()
    _upload(moto, "monitors", bundle + b"\0" * 512, wanted)
    done = _step(moto, host, f"base:{sha} monitors:{wanted}", 1)
    assert done.returncode == 1
    assert f"bundles/monitors/{wanted}.tar: sha256 mismatch" in done.stderr
    assert "nothing installed" in done.stderr
    assert _listing(host) == before, "the host keeps what it had"
    with sqlite3.connect(host / "var/spool/hostguard/spool.db") as db:
        texts = [str(row) for row in db.execute("SELECT * FROM message")]
    assert any("could not apply the stack's payload" in t and "sha256 mismatch" in t for t in texts), texts


def test_a_missing_object_is_refused_the_same_way(moto: str, bundle: bytes, host: Path) -> None:
    before = _listing(host)
    sha = hashlib.sha256(bundle).hexdigest()
    done = _step(moto, host, f"base:{sha} web:{'0' * 64}", 1)
    assert done.returncode == 1
    assert f"s3://{BUCKET}/bundles/web/{'0' * 64}.tar: HTTP 404" in done.stderr
    assert _listing(host) == before


def test_a_rotation_reaches_the_host_at_the_next_run(moto: str, bundle: bytes, host: Path) -> None:
    version = _put_parameter(moto, f"url={URL_2}\n")
    assert version == 2
    sha = hashlib.sha256(bundle).hexdigest()
    done = _step(moto, host, f"base:{sha} monitors:{sha}", version)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "hostguard: webhook version 2"
    assert "webhook written to /etc/hostguard/webhook.conf" in done.stdout
    assert URL_2 in (host / "etc/hostguard/webhook.conf").read_text()
    assert URL_2 not in done.stdout + done.stderr


def test_parameters_are_checked_before_anything_is_fetched(moto: str, host: Path) -> None:
    for bundles in ("monitors:" + "a" * 64, "base:" + "a" * 64 + " base:" + "b" * 64, "base:abc; rm -rf /", ""):
        done = _step(moto, host, bundles, 1)
        assert done.returncode == 1
        assert "Bundles must be base:SHA256" in done.stderr


def test_the_bundle_members_are_checked_before_extraction(tmp_path: Path) -> None:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("../escape")
        tar.addfile(info, io.BytesIO(b""))
    bundle_tar = tmp_path / "bundle.tar"
    bundle_tar.write_bytes(out.getvalue())
    with pytest.raises(ssmstep.StepError, match="refused member '../escape'"):
        ssmstep.install_part("base", str(bundle_tar), str(tmp_path))
    assert not (tmp_path.parent / "escape").exists()


class _Server:
    """A loopback HTTP server answering every request with ANSWER(path) -> (status, headers, body chunks);
    the requests it got (path and headers) in REQUESTS."""

    def __init__(self, answer: Callable[[str], tuple[int, dict[str, str], Iterable[bytes]]]) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append((self.path, dict(self.headers)))
                status, headers, chunks = answer(self.path)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(OSError):
                    for chunk in chunks:
                        self.wfile.write(chunk)

            do_PUT = do_POST = do_GET

            def log_message(self, *_args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_the_step_follows_no_redirect_and_sends_its_signature_nowhere_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = _Server(lambda _path: (200, {}, [b"x"]))
    bouncer = _Server(lambda path: (302, {"Location": target.url + path}, []))
    try:
        monkeypatch.setenv("HOSTGUARD_AWS_ENDPOINT", bouncer.url)
        creds = ssmstep.Creds("AKIDTEST", "secret", "SESSION-TOKEN-TEST", "us-east-1")
        with pytest.raises(ssmstep.StepError, match="HTTP 302"):
            ssmstep.fetch_bundle(creds, BUCKET, "base", "0" * 64, str(tmp_path / "base.tar"))
        assert len(bouncer.requests) == 1 and "SESSION-TOKEN-TEST" in str(bouncer.requests[0][1])
        assert target.requests == [], "the signed request was sent on to the redirect's target"
    finally:
        bouncer.close()
        target.close()


def test_a_bundle_streams_into_a_bounded_file_while_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """48 MiB fetched with little memory; one over the bound refused as it streams, no file kept whole."""
    block = b"\x5a" * (1 << 20)
    data_sha = hashlib.sha256(block * 48).hexdigest()
    server = _Server(lambda _path: (200, {"Content-Length": str(48 << 20)}, (block for _ in range(48))))
    try:
        monkeypatch.setenv("HOSTGUARD_AWS_ENDPOINT", server.url)
        tracemalloc.start()
        ssmstep.fetch_bundle(_creds(), BUCKET, "base", data_sha, str(tmp_path / "base.tar"))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 8 << 20, f"fetching 48 MiB peaked at {peak >> 20} MiB"
        assert (tmp_path / "base.tar").stat().st_size == 48 << 20
        assert (tmp_path / "base.tar").stat().st_mode & 0o777 == 0o600
        monkeypatch.setattr(ssmstep, "BUNDLE_MAX", 8 << 20)
        with pytest.raises(ssmstep.StepError, match="larger than 8,388,608 bytes, refused"):
            ssmstep.fetch_bundle(_creds(), BUCKET, "web", data_sha, str(tmp_path / "web.tar"))
        assert (tmp_path / "web.tar").stat().st_size <= 8 << 20
    finally:
        server.close()


@pytest.mark.parametrize("failure", ["credentials JSON", "MemoryError"])
def test_every_failure_is_the_could_not_apply_line_and_a_chat_alert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], failure: str
) -> None:
    def metadata(path: str) -> tuple[int, dict[str, str], list[bytes]]:
        if path.endswith("security-credentials/"):
            return 200, {}, [b"the-role"]
        return 200, {}, [b"not json {" if path.endswith("the-role") else b"token"]

    imds = _Server(metadata)
    posted: list[str] = []
    monkeypatch.setenv("HOSTGUARD_IMDS", imds.url)
    monkeypatch.setattr(ssmstep, "notify", lambda text, _root: posted.append(text))
    if failure == "MemoryError":

        def no_memory(*_args: object) -> list[str]:
            raise MemoryError

        monkeypatch.setattr(ssmstep, "apply", no_memory)
    try:
        rc = ssmstep.main([BUCKET, f"base:{'0' * 64}", PARAMETER, "1"])
    finally:
        imds.close()
    why = "unexpected MemoryError" if failure == "MemoryError" else "not the expected JSON"
    assert rc == 1
    assert "hostguard: " in capsys.readouterr().err
    assert len(posted) == 1 and "could not apply the stack's payload" in posted[0] and why in posted[0], posted
